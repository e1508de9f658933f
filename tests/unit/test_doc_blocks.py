"""The documentation's code blocks, unit tier: every block keeps to the convention (tests/docblocks.py),
the blocks marked `<!-- test: unit -->` run, every yaml and json block parses (and loads, when
marked program or scenario); then the block reader itself on small pages with exact results."""
from __future__ import annotations

import pytest

import docblocks
from docblocks import REPO, Block, PageRun, commands, parse, problems, read, shell_script

ALL = {page: read(page) for page in docblocks.pages()}
UNIT = [b for blocks, _ in ALL.values() for b in blocks if b.unit]


def test_the_pages_are_read():
    assert "README.md" in ALL and "docs/index.md" in ALL
    assert "docs/reference/cli.md" not in ALL           # generated at build time
    assert sum(len(blocks) for blocks, _ in ALL.values()) > 0


def test_every_block_keeps_to_the_convention():
    found = [p for blocks, stray in ALL.values() for p in stray + [q for b in blocks for q in problems(b)]]
    assert found == [], "\n".join(found)


def test_blocks_not_run_are_listed_with_a_reason():
    skipped = [b for blocks, _ in ALL.values() for b in blocks if b.marker == "not-run"]
    for b in skipped:
        print(f"not run: {b.id}: {b.reason}")
    assert all(b.reason and b.lang in ("python", "console") for b in skipped)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    made: dict[str, PageRun] = {}

    def get(page: str) -> PageRun:
        if page not in made:
            blocks = [b for b in ALL[page][0] if b.unit]
            made[page] = PageRun(blocks, tmp_path_factory.mktemp("docs-unit"), timeout=120)
        return made[page]
    yield get
    for run in made.values():
        run.close()


@pytest.mark.parametrize("block", UNIT, ids=[b.id for b in UNIT])
def test_unit_block(block, runs):
    outcome = runs(block.page).test(block)
    assert outcome.ok, outcome.message


PAGE = """\
# A page

<!-- test: unit -->
```python
print("one")
```

- a list item:

    <!-- test: not-run needs model weights -->
    ```console
    $ vllm serve some/model \\
        --port 8000
    INFO started
    $ echo done
    ```

<!-- test: not-run -->
~~~bash
ls
~~~
<!-- test: unit -->

````text
```python
not a block of its own
```
````
"""


def test_blocks_of_a_page_are_read_with_their_lines_markers_and_text():
    blocks, stray = parse("p.md", PAGE)
    assert [(b.line, b.lang, b.marker, b.reason, b.first) for b in blocks] == [
        (4, "python", "unit", "", 5), (11, "console", "not-run", "needs model weights", 12),
        (19, "bash", "not-run", "", 20), (24, "text", None, "", 25)]
    assert blocks[1].text == "$ vllm serve some/model \\\n    --port 8000\nINFO started\n$ echo done\n"
    assert blocks[3].text == "```python\nnot a block of its own\n```\n"
    assert stray == ["p.md:22: a test marker must be on the line right before a code block"]
    assert [b.id for b in blocks if b.unit] == ["p.md:4"] and not any(b.live for b in blocks)


def test_problems_name_the_block_and_the_rule():
    blocks, _ = parse("p.md", PAGE)
    assert [problems(b) for b in blocks] == [
        [], [], ["p.md:19: fence language 'bash': use one of python, console, yaml, json, text"], []]
    odd = [Block("p.md", 3, "yaml", "a: 1\n", 4, "unit"), Block("p.md", 9, "console", "", 10, "not-run"),
           Block("p.md", 12, "python", "", 13, "live"), Block("p.md", 15, "", "", 16),
           Block("p.md", 18, "python", "", 19, "unit", "because")]
    assert [problems(b) for b in odd] == [
        ["p.md:3: the marker 'unit' goes with python or console blocks"],
        ["p.md:9: `not-run` needs a reason (what this machine cannot have)"],
        ["p.md:12: unknown test marker 'live': one of unit, not-run, program, scenario"],
        ["p.md:15: fence language '(none)': use one of python, console, yaml, json, text"],
        ["p.md:18: the marker 'unit' takes no text ('because')"]]


def test_console_commands_continue_over_backslashes_and_make_is_a_dry_run():
    block = Block("p.md", 7, "console", "$ make unit\nsample output\n$ clinigym run \\\n  --agent oracle\n", 8)
    assert commands(block) == [(8, "make unit"), (10, "clinigym run \\\n  --agent oracle")]
    assert shell_script(block, REPO).splitlines()[2:] == [
        "DOC_LINE=8", f"(cd {REPO} && make -n unit)", "DOC_LINE=10", "clinigym run \\", "  --agent oracle"]


def test_a_page_runs_in_order_in_one_folder_and_a_failure_names_its_line(tmp_path):
    page = ("```python\nopen('made.txt', 'w').write('x')\n```\n"
            "```console\n$ test -f made.txt\n$ false\n$ echo never\n```\n"
            "```python\nprint('after')\n```\n")
    blocks, _ = parse("p.md", page)
    run = PageRun(blocks, tmp_path, timeout=60)
    first = run.test(blocks[1])
    assert not first.ok and first.message.startswith("p.md:4 (console): exit status 1")
    assert "docs: p.md:6: exit status 1" in first.message and (tmp_path / "work" / "made.txt").exists()
    assert run.test(blocks[2]) == docblocks.Outcome(False, "p.md:9: not run, an earlier block of the page "
                                                           "failed: p.md:4")


def test_a_python_failure_shows_its_traceback_and_where_its_lines_start(tmp_path):
    blocks, _ = parse("p.md", "text\n\n```python\nx = 1\nraise SystemExit('stopped at ' + str(x))\n```\n")
    outcome = PageRun(blocks, tmp_path, timeout=60).test(blocks[0])
    assert outcome.message == ("p.md:3 (python): exit status 1 (traceback line N is page line 3 + N); "
                               "output:\nstopped at 1\n")


def test_marked_yaml_is_loaded_by_clinigyms_loader(tmp_path):
    page = ("<!-- test: scenario -->\n```yaml\nid: first\napp: orthanc\noverview: Open\nsteps: []\n```\n"
            "```yaml\n{not: [closed\n```\n")
    blocks, _ = parse("p.md", page)
    run = PageRun(blocks, tmp_path, timeout=60)
    assert run.test(blocks[0]).message == (f"p.md:2 (yaml): SpecError: {tmp_path}/specs/scenarios/orthanc/first.yaml: "
                                           "steps: List should have at least 1 item after validation, not 0")
    assert run.test(blocks[1]).message == "p.md:8: not run, an earlier block of the page failed: p.md:2"
    assert PageRun(blocks[1:], tmp_path, timeout=60).test(blocks[1]).message.startswith("p.md:8 (yaml): ParserError")
