"""The code blocks of the documentation (README.md and docs/**/*.md) and how each is tested.

The convention (docs/getting-started.md keeps to it, every page does):
- ```python runs in a fresh `python` of this virtualenv; ```console lines "$ CMD" run with bash
  (a trailing backslash continues the command; other lines are sample output, not compared),
  `make TARGET` as `make -n TARGET` in the repository. Both must exit 0. The blocks of a page
  run in order in one working folder of the page (files persist, variables do not).
- ```yaml must parse; marked `program` or `scenario` it is loaded by clinigym's own loader.
  ```json must parse. ```text is not run. Any other fence language is an error.
- A marker comment on the line right before a block: `<!-- test: unit -->` (the block needs no
  program, display or Docker: it also runs in `make unit`), `<!-- test: not-run REASON -->`
  (a command this machine cannot run; the reason is required), `<!-- test: program -->`,
  `<!-- test: scenario -->` (yaml).

Tiers: the unit tier runs the blocks marked unit and checks every yaml and json block; the live
tier runs every page that has a live block (python/console without a marker), all its
runnable blocks in order, so that a live block finds the files its page's earlier blocks wrote.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import yaml

REPO = Path(__file__).resolve().parents[1]
LANGUAGES = ("python", "console", "yaml", "json", "text")
# Which languages each marker goes with.
MARKERS = {"unit": ("python", "console"), "not-run": ("python", "console"),
           "program": ("yaml",), "scenario": ("yaml",)}
# Pages written by a program, not by hand (the CLI reference is generated at build time).
GENERATED = ("docs/reference/cli.md",)
_MARKER = re.compile(r"^\s*<!--\s*test:\s*(?P<kind>\S+)(?P<reason>.*?)-->\s*$")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MAKE = re.compile(r"^make(\s|$)")


@dataclass(frozen=True)
class Block:
    page: str            # relative to the repository
    line: int            # 1-based line of the opening fence
    lang: str
    text: str
    first: int           # the doc line of the block's first content line
    marker: str | None = None
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in ("python", "console") and self.marker != "not-run"

    @property
    def unit(self) -> bool:
        """Run (or checked) by the unit tier."""
        return self.lang in ("yaml", "json") or (self.runs and self.marker == "unit")

    @property
    def live(self) -> bool:
        return self.runs and self.marker is None


def pages(root: Path = REPO) -> list[str]:
    found = ["README.md"] + sorted(str(p.relative_to(root)) for p in (root / "docs").rglob("*.md"))
    return [p for p in found if p not in GENERATED]


def parse(page: str, text: str) -> tuple[list[Block], list[str]]:
    """The fenced blocks of a page and its problems (a marker that is on no block's line)."""
    lines = text.splitlines()
    blocks, problems, i = [], [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            marker = _MARKER.match(lines[i])
            if marker and not (i + 1 < len(lines) and _FENCE.match(lines[i + 1])):
                problems.append(f"{page}:{i + 1}: a test marker must be on the line right before a code block")
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), len(lines))
        body = [line[indent:] if line[:indent].strip() == "" else line.lstrip() for line in lines[i + 1:end]]
        marker = _MARKER.match(lines[i - 1]) if i else None
        info = m["info"].strip()
        blocks.append(Block(page, i + 1, info.split()[0] if info else "", "\n".join(body) + "\n" if body else "",
                            i + 2, marker["kind"] if marker else None, marker["reason"].strip() if marker else ""))
        i = end + 1
    return blocks, problems


def read(page: str, root: Path = REPO) -> tuple[list[Block], list[str]]:
    return parse(page, (root / page).read_text())


def problems(block: Block) -> list[str]:
    """What breaks the convention in one block."""
    if block.lang not in LANGUAGES:
        return [f"{block.id}: fence language {block.lang or '(none)'!r}: use one of {', '.join(LANGUAGES)}"]
    if block.marker is None:
        return []
    if block.marker not in MARKERS:
        return [f"{block.id}: unknown test marker {block.marker!r}: one of {', '.join(MARKERS)}"]
    if block.lang not in MARKERS[block.marker]:
        return [f"{block.id}: the marker {block.marker!r} goes with {' or '.join(MARKERS[block.marker])} blocks"]
    if block.marker == "not-run" and not block.reason:
        return [f"{block.id}: `not-run` needs a reason (what this machine cannot have)"]
    if block.marker != "not-run" and block.reason:
        return [f"{block.id}: the marker {block.marker!r} takes no text ({block.reason!r})"]
    return []


def commands(block: Block) -> list[tuple[int, str]]:
    """The commands of a console block, each with its doc line: "$ " lines, joined with the
    lines their trailing backslash continues onto."""
    lines = block.text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("$ "):
            start, command = i, lines[i][2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command += "\n" + lines[i]
            out.append((block.first + start, command))
        i += 1
    return out


def shell_script(block: Block, repo: Path = REPO) -> str:
    """The bash script of a console block: every command in order, stopping at the first that
    fails and naming its line; `make ...` as a dry run in the repository."""
    out = ["set -e",
           f"trap 's=$?; [ $s -eq 0 ] || echo \"docs: {block.page}:$DOC_LINE: exit status $s\" >&2' EXIT"]
    for line, command in commands(block):
        if _MAKE.match(command):
            command = f"(cd {shlex.quote(str(repo))} && make -n{command[4:]})"
        out += [f"DOC_LINE={line}", command]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str = ""


def _run(argv: list[str], cwd: Path, timeout: float, stdin: str, groups: list[int]) -> tuple[int | None, str]:
    """A process in a session of its own (so that what it starts can be ended with it): its
    exit status (None on timeout) and its output."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    groups.append(proc.pid)
    try:
        out, _ = proc.communicate(stdin, timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return None, proc.communicate()[0]


def _check_yaml(block: Block, specs: Path) -> None:
    """Parse; a marked block is also loaded as a program or scenario file, with the programs of
    the page's earlier program blocks on the search path."""
    docs = list(yaml.safe_load_all(block.text))
    if block.marker is None:
        return
    from clinigym.spec.apps import load_app
    from clinigym.spec.scenarios import load_scenario
    data = docs[0] if len(docs) == 1 and isinstance(docs[0], dict) else None
    if data is None:
        raise ValueError("a program or scenario file is one YAML mapping")
    if block.marker == "program":
        path = specs / "containers" / str(data.get("name")) / "app.yaml"
    else:
        path = specs / "scenarios" / str(data.get("app")) / f"{data.get('id', f'docs-line-{block.line}')}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block.text)
    with mock.patch.dict(os.environ, {"CLINIGYM_PATH": str(specs)}):
        load_app(data["name"]) if block.marker == "program" else load_scenario(path)


@dataclass
class PageRun:
    """The blocks of one page that a tier tests, each tested once, in page order, in the page's
    working folder."""
    blocks: list[Block]
    folder: Path
    timeout: float
    done: dict[int, Outcome] = field(default_factory=dict)
    groups: list[int] = field(default_factory=list)

    def test(self, block: Block) -> Outcome:
        """The block's outcome, after every earlier block of the page (a failed earlier block
        fails this one too, naming it)."""
        for earlier in self.blocks[:self.blocks.index(block)]:
            if not self._test(earlier).ok:
                return Outcome(False, f"{block.id}: not run, an earlier block of the page failed: {earlier.id}")
        return self._test(block)

    def _test(self, block: Block) -> Outcome:
        if block.line not in self.done:
            self.done[block.line] = self._outcome(block)
        return self.done[block.line]

    def _outcome(self, block: Block) -> Outcome:
        work = self.folder / "work"
        work.mkdir(parents=True, exist_ok=True)
        try:
            if block.lang == "json":
                json.loads(block.text)
                return Outcome(True)
            if block.lang == "yaml":
                _check_yaml(block, self.folder / "specs")
                return Outcome(True)
        except Exception as exc:
            return Outcome(False, f"{block.id} ({block.lang}): {type(exc).__name__}: {exc}")
        argv = [sys.executable, "-"] if block.lang == "python" else ["bash", "-"]
        code = block.text if block.lang == "python" else shell_script(block)
        status, out = _run(argv, work, self.timeout, code, self.groups)
        if status == 0:
            return Outcome(True)
        why = f"timed out after {self.timeout:g} s" if status is None else f"exit status {status}"
        where = "" if block.lang == "console" else f" (traceback line N is page line {block.first - 1} + N)"
        return Outcome(False, f"{block.id} ({block.lang}): {why}{where}; output:\n{out[-6000:]}")

    def close(self) -> None:
        """End whatever the page's blocks left running."""
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
