"""The generated reference of the documentation: the command line page (from the argparse parser,
at build time, by the MkDocs hook) and the JSON Schemas of the program and scenario files (committed
under docs/reference/schemas/, equal to what the models generate); nothing points outside the
repository."""
from __future__ import annotations

import argparse
import json
import subprocess

import jsonschema
import pytest
import yaml
from mkdocs.config import load_config
from mkdocs.structure.files import Files

from clinigym.cli.help_page import _inline, commands, markdown
from clinigym.cli.main import build_parser
from clinigym.spec.paths import program_files, scenario_files
from clinigym.spec.schema import KINDS, json_schema, schema_text
from conftest import REPO, cli

SCHEMAS = REPO / "docs" / "reference" / "schemas"


def test_every_command_and_argument_is_on_the_cli_page():
    parser = build_parser()
    page = markdown(parser)
    found = commands(parser)
    assert {words[0] for words, _, _ in found} == set(next(
        a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices) - {
        alias for _, _, aliases in found for alias in aliases}
    for words, sub, aliases in found:
        assert f"## {sub.prog} {{#{'-'.join(words)}}}\n" in page
        for action in sub._actions:
            if action.help not in (None, argparse.SUPPRESS) and action.option_strings \
                    and not isinstance(action, argparse._HelpAction):
                assert f"`{action.option_strings[0]}" in page.split(f"{{#{'-'.join(words)}}}")[1], (sub.prog, action)
        if sub.epilog:
            assert sub.epilog.strip("\n") in page
        assert all(f"`clinigym {alias}`" in page for alias in aliases)


def test_help_text_shows_as_typed_with_its_code_spans():
    assert _inline("a <program> *glob* `clinigym run --out DIR`  and\n more") == \
        r"a &lt;program&gt; \*glob\* `clinigym run --out DIR` and more"
    assert _inline("an odd ` tick_name") == r"an odd ` tick\_name"


def test_the_hook_adds_the_generated_page_to_the_site():
    """The build's own plugin chain (the hooks of mkdocs.yml among them), up to the files."""
    config = load_config(str(REPO / "mkdocs.yml"))
    config.plugins.on_startup(command="build", dirty=False)
    config = config.plugins.on_config(config)
    files = config.plugins.on_files(Files([]), config=config)
    assert files.get_file_from_path("reference/cli.md").content_string == markdown(build_parser())


@pytest.mark.parametrize("kind", list(KINDS))
def test_committed_schema_is_the_generated_one(kind):
    path = SCHEMAS / f"{kind}.schema.json"
    assert path.read_text() == schema_text(kind), \
        f"stale: run `clinigym schema {kind} --json-out docs/reference/schemas/{kind}.schema.json`"


def test_the_schema_command_prints_or_writes_it(capsys, tmp_path):
    assert cli("schema", "scenario") == 0
    assert capsys.readouterr().out == schema_text("scenario")
    assert cli("schema", "program", "--json-out", str(tmp_path / "p.json")) == 0
    assert (tmp_path / "p.json").read_text() == schema_text("program") and capsys.readouterr().out == ""


@pytest.mark.parametrize("kind,files", [("program", lambda: list(program_files().values())),
                                        ("scenario", scenario_files)])
def test_every_library_file_is_valid_by_its_schema(kind, files):
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{kind}.schema.json").read_text()))
    checked = {str(p.relative_to(REPO)): [e.message for e in validator.iter_errors(yaml.safe_load(p.read_text()))]
               for p in files()}
    assert len(checked) >= {"program": 7, "scenario": 100}[kind]
    assert {p: e for p, e in checked.items() if e} == {}


def test_the_schema_is_the_file_not_the_model():
    scenario, program = json_schema("scenario"), json_schema("program")
    assert scenario["required"] == ["app", "overview", "steps"] and "path" not in scenario["properties"]
    assert program["required"] == ["name", "title", "processes"] and "folder" not in program["properties"]
    step = {"action": "click", "target": {"box": [1, 2, 3, 4]}, "instruction": "Click", "transition": {"window": "x"}}
    valid = jsonschema.Draft202012Validator(scenario)
    assert list(valid.iter_errors({"app": "orthanc", "overview": "o", "steps": [step]})) == []
    typo = list(valid.iter_errors({"app": "orthanc", "overview": "o", "steps": [step], "stepz": []}))
    assert [e.message for e in typo] == ["Additional properties are not allowed ('stepz' was unexpected)"]


def test_no_file_points_outside_the_repository():
    """Beside the checkout there may be other folders (a `shared/` with MedSPOT's annotations);
    the project names none of them. .ci/run alone passes CI's copy beside the clone."""
    listed = subprocess.run(["git", "-c", f"safe.directory={REPO}", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True, check=True).stdout
    files = [REPO / name for name in listed.decode().split("\0") if name and name != ".ci/run"]
    words = [w.encode() for w in ("../" + "shared", "shared/" + "docs", "shared/" + "medspot")]
    found = [f"{f.relative_to(REPO)}: {w.decode()}" for f in files if f.is_file()
             for w in words if w in f.read_bytes()]
    assert len(files) > 100 and found == []
