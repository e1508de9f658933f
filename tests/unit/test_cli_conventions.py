"""The command line's conventions (clinigym/cli/main.py): a version, examples in every help
that parse, values of a fixed set checked when parsing, a warning for each flag that the
chosen mode or agent ignores, `--out` a folder, "program" the word, old spellings that work
with a warning."""
from __future__ import annotations

import argparse
import json
import re
import shlex

import pytest

from clinigym._version import __version__
from clinigym.cli import bench, collect, programs, runs
from clinigym.cli.conventions import warn_ignored
from clinigym.cli.main import build_parser, main
from clinigym.spec.scenarios import select

# The commands that warn about ignored flags, with their rules.
RULES = {runs.cmd_run: runs.RUN_IGNORED, runs.cmd_score: runs.SCORE_IGNORED, bench.cmd_bench: bench.BENCH_IGNORED,
         collect.cmd_collect: collect.COLLECT_IGNORED, programs.cmd_apps: programs.IGNORED}
DEPRECATED = "is deprecated: use {} (the old spelling goes in the next release)"


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser by its name (an alias, `apps`, is the same parser)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: p for name, p in sub.choices.items() if name != "apps"}


def example_lines(help_text: str) -> list[str]:
    """The commands of the help's `examples:` section."""
    assert "\nexamples:\n" in help_text
    section = help_text.split("\nexamples:\n", 1)[1]
    lines = [line.strip() for line in section.splitlines() if line.strip()]
    assert lines and all(line.startswith(("clinigym ", "# ")) for line in lines), lines
    return [line for line in lines if line.startswith("clinigym ")]


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"clinigym {__version__}\n"


def test_every_command_has_examples():
    names = set(commands())
    assert {"programs", "run", "score", "bench", "collect", "report", "soak", "reference"} <= names
    for name, parser in commands().items():
        assert len(example_lines(parser.format_help())) in (1, 2, 3), name
    assert len(example_lines(build_parser().format_help())) == 3


@pytest.mark.parametrize("example", [line for p in [build_parser(), *commands().values()]
                                     for line in example_lines(p.format_help())])
def test_each_example_parses_and_names_real_scenarios(example, capsys):
    words = shlex.split(example)
    assert words[0] == "clinigym"
    args = build_parser().parse_args(words[1:])
    # No example uses an old spelling or a flag that its command ignores.
    assert warn_ignored(args, RULES.get(args.func, ())) == [] and capsys.readouterr().err == ""
    scenario = getattr(args, "scenario", None) or []
    for pattern in [*([scenario] if isinstance(scenario, str) else scenario), getattr(args, "pattern", None) or "*"]:
        assert select(pattern), pattern


def test_out_is_a_folder():
    # (an old `--out FILE` of score and bench is a hidden alias of --json-out for one release)
    outs = {name: p._option_string_actions["--out"] for name, p in commands().items()
            if "--out" in p._option_string_actions and p._option_string_actions["--out"].help != argparse.SUPPRESS}
    assert {"run", "report", "soak", "collect"} <= set(outs)
    assert {name: a.metavar for name, a in outs.items()} == dict.fromkeys(outs, "DIR")


def test_help_says_program():
    for name, parser in commands().items():
        text = parser.format_help().replace("app.yaml", "")
        assert not re.search(r"\bapps?\b", text), name


@pytest.mark.parametrize("argv, problem", [
    (["run", "--mode", "fast"], "argument --mode: invalid choice: 'fast' (choose from 'steps', 'plan', 'goal')"),
    (["run", "--backend", "cloud"], "argument --backend: invalid choice: 'cloud' (choose from 'local', 'docker')"),
    (["score", "--penalties", "none"], "argument --penalties: invalid choice: 'none' (choose from 'medcua-code', "
                                       "'medcua-readme', 'medcua-release')"),
    (["compare", "x", "--penalties", "none"], "argument --penalties: invalid choice: 'none'"),
    (["bench", "--backends", "cloud"], "argument --backends: invalid choice: 'cloud'"),
    (["bench", "--program", "paint"], "argument --program: no such program 'paint' (choose from aeskulap, "),
    (["bench", "--side-by-side", "paint"], "argument --side-by-side: no such program 'paint'"),
    (["collect", "--program", "paint"], "argument --program: no such program 'paint'"),
    (["images", "paint"], "argument PROGRAM: no such program 'paint'"),
    (["bench", "--apps", "paint"], "argument --apps: no such program 'paint'"),
    (["collect", "--app", "paint"], "argument --app: no such program 'paint'"),
    (["replay", "x", "--backend", "cloud"], "argument --backend: invalid choice: 'cloud'"),
    (["reference", "x", "--backend", "cloud"], "argument --backend: invalid choice: 'cloud'")])
def test_choices_are_checked_when_parsing(argv, problem, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2 and problem in capsys.readouterr().err


@pytest.mark.parametrize("argv, warnings", [
    (["run", "--budget", "5"], ["--budget is ignored in the steps mode"]),
    (["run", "--audit", "end"], ["--audit is ignored in the steps mode"]),
    (["run", "--mode", "steps", "--budget", "5", "--recovery"], ["--budget is ignored in the steps mode"]),
    (["run", "--mode", "plan", "--recovery", "--budget", "5"], ["--recovery is ignored in the plan mode"]),
    (["run", "--mode", "goal", "--recovery"], ["--recovery is ignored in the goal mode"]),
    (["run", "--software", "Orthanc", "--single-step", "--delta", "3"],
     ["--software is ignored without --dataset (a static-mode flag)",
      "--single-step is ignored without --dataset (a static-mode flag)",
      "--delta is ignored without --dataset (a static-mode flag)"]),
    (["run", "--dataset", "d", "--software", "Orthanc", "--mode", "goal", "--episodes", "2", "--backend", "docker"],
     ["--episodes is ignored with --dataset (the static mode)", "--mode is ignored with --dataset (the static mode)",
      "--backend is ignored with --dataset (the static mode)"]),
    (["run", "--resume", "r", "--scenario", "orthanc/*", "--seed", "1", "--model", "m"],
     ["--scenario is ignored with --resume (the run keeps the parameters it was started with)",
      "--seed is ignored with --resume (the run keeps the parameters it was started with)",
      "--model is ignored with --resume (the run keeps the parameters it was started with)"]),
    (["run", "--base-url", "http://127.0.0.1:9/v1", "--cua-images", "2"],
     ["--base-url is ignored by the oracle agent", "--cua-images is ignored by the oracle agent"]),
    (["run", "--agent", "http", "--base-url", "http://127.0.0.1:9/v1", "--cua-images", "2", "--checkpoint", "c"],
     ["--cua-images is ignored by the http agent", "--checkpoint is ignored by the http agent"]),
    (["run", "--agent", "cua", "--mode", "goal", "--base-url", "u", "--cua-images", "2", "--model", "m"], []),
    (["run", "--mode", "plan", "--budget", "5"], []),
    (["run", "--dataset", "d", "--software", "Orthanc", "--single-step", "--delta", "2"], []),
    (["score", "x", "--top-k", "3", "--dataset", "d"],
     ["--dataset is ignored without --predictions", "--top-k is ignored without --predictions"]),
    (["score", "--predictions", "p", "--dataset", "d", "--penalties", "medcua-readme"],
     ["--penalties is ignored with --predictions"]),
    (["bench", "--throughput", "--program", "orthanc", "--repeats", "2", "--backends", "docker"],
     ["--program is ignored with --throughput", "--repeats is ignored with --throughput",
      "--backends is ignored with --throughput"]),
    (["bench", "--rounds", "2", "--watch-all"], ["--rounds is ignored without --throughput"]),
    (["collect", "--review", "e", "--program", "orthanc", "--out", "o", "--no-ocr"],
     ["--program is ignored with --review", "--out is ignored with --review", "--no-ocr is ignored with --review"]),
    (["programs", "--fetch", "--json"], ["--json is ignored with --fetch"]),
    (["programs", "--packages", "--json"], ["--json is ignored with --packages"])])
def test_ignored_flags_warn(argv, warnings, capsys):
    args = build_parser().parse_args(argv)
    assert warn_ignored(args, RULES[args.func]) == warnings
    assert capsys.readouterr().err == "".join(f"warning: {w}\n" for w in warnings)


def test_the_commands_warn_then_run(tmp_path, capsys):
    # Each command warns first, then does what it was asked (here: fails on what it was given).
    assert main(["run", "--budget", "5", "--out", str(tmp_path / "a"), "--resume", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("warning: --budget is ignored with --resume (the run keeps the parameters it was "
                          "started with)\n") and "error: give --out (a new run) or --resume DIR" in err
    assert main(["score", str(tmp_path), "--top-k", "2"]) == 1
    assert capsys.readouterr().err == (f"warning: --top-k is ignored without --predictions\n"
                                       f"no recorded episodes under {tmp_path}\n")
    assert main(["collect", "--review", str(tmp_path / "none"), "--program", "orthanc"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("warning: --program is ignored with --review\nerror: ")


def test_programs_and_its_old_name(capsys):
    assert main(["programs", "--packages"]) == 0
    packages = capsys.readouterr()
    assert packages.err == "" and "orthanc" in packages.out.split()
    assert main(["apps", "--packages"]) == 0
    old = capsys.readouterr()
    assert old.out == packages.out
    assert old.err == ("warning: `clinigym apps` is deprecated: use `clinigym programs` (the old name goes in "
                       "the next release)\n")


@pytest.mark.parametrize("argv, dest, value, new", [
    (["score", "x", "--out", "s.json"], "json_out", "s.json", "--json-out"),
    (["bench", "--out", "b.json"], "json_out", "b.json", "--json-out"),
    (["bench", "--apps", "orthanc", "dicomscope"], "program", ["orthanc", "dicomscope"], "--program"),
    (["collect", "--app", "orthanc"], "program", "orthanc", "--program"),
    (["collect", "--out-dir", "mine"], "out", "mine", "--out")])
def test_old_spellings_work_with_a_warning(argv, dest, value, new, capsys):
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    old = next(a for a in argv if a.startswith("--"))
    assert capsys.readouterr().err == f"warning: {old} {DEPRECATED.format(new)}\n"


def test_score_writes_its_summary_to_json_out(runs, tmp_path, capsys):
    # `runs`: two recorded runs of the static environment (tests/report_runs.py).
    summary = tmp_path / "summary.json"
    assert main(["score", str(runs[0]), "--json", "--json-out", str(summary)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads(summary.read_text()) == printed and printed["tca"] == 1.0
