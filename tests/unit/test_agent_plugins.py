"""Agents from outside clinigym: `package.module:factory` specs and the `clinigym.agents`
entry points, found for real (modules and a distribution's metadata written to a temporary
folder on sys.path), their errors, the factory contract, and the command line's checks."""
import argparse
import json
import os
import subprocess
import sys
import textwrap

import pytest

from clinigym.agents import AGENTS, all_agents, make_agent, resolve
from clinigym.agents.plugins import parse_option
from clinigym.agents.registry import check_agent
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError

CONTEXT = AgentContext((640, 360), "orthanc", ("click", "done"), "plan")

AGENT_MODULE = '''
"""A lab's agent (a test module)."""
from clinigym.core.actions import Action


class CentreClicker:
    name = "centre"

    def __init__(self, context, seed, *, margin=0):
        self.context, self.seed, self.margin = context, seed, margin

    def reset(self, seed=None):
        self.seed = seed

    def act(self, observation, info):
        w, h = self.context.observation_size
        return Action("click", (w / 2 + self.margin, h / 2))


def make_agent(context, seed, margin=0):
    """Clicks the centre of the screen, `margin` pixels to the right."""
    return CentreClicker(context, seed, margin=margin)


def make_positional(context, seed, /, *, size=1):
    return CentreClicker(context, seed)


def make_any(context, seed, **options):
    """Takes any option; remembers them all."""
    agent = CentreClicker(context, seed)
    agent.options = options
    return agent


def not_an_agent(context, seed):
    return "click(1, 2)"


class Tools:
    @staticmethod
    def create(context, seed):
        return CentreClicker(context, seed)


NOT_CALLABLE = 42
'''


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A folder on sys.path with the lab's module (a fresh module name per test)."""
    name = f"lab_{os.urandom(4).hex()}"
    write(tmp_path, f"{name}.py", AGENT_MODULE)
    write(tmp_path, f"{name}_broken.py", "raise RuntimeError('the lab module is broken')\n")
    write(tmp_path, f"{name}_needs.py", "import not_installed_anywhere_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def distribution(folder, entries: dict[str, str], name="lab-agents", version="1.2.0"):
    """An installed distribution's metadata, as pip writes it, declaring `entries`."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    write(info, "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entries.items())
    write(info, "entry_points.txt", f"[clinigym.agents]\n{lines}\n")


# --- module:factory ------------------------------------------------------------------------

def test_a_spec_builds_the_agent_from_the_public_context(lab):
    agent = make_agent(f"{lab}:make_agent", CONTEXT, 7, margin=5)
    assert type(agent).__name__ == "CentreClicker" and agent.context is CONTEXT and agent.seed == 7
    assert agent.act({}, {}).point == (325.0, 180.0)
    entry = resolve(f"{lab}:make_agent")
    assert entry.source == f"{lab}:make_agent" and not entry.privileged
    assert entry.description == "Clicks the centre of the screen, `margin` pixels to the right."


def test_a_dotted_attribute_and_a_class_are_factories(lab):
    assert make_agent(f"{lab}:Tools.create", CONTEXT).name == "centre"
    agent = make_agent(f"{lab}:CentreClicker", CONTEXT, 3, margin=1)
    assert agent.seed == 3 and agent.margin == 1


def test_never_privileged(lab):
    """Ground truth handed to make_agent does not reach an agent from outside."""
    secret = object()
    agent = make_agent(f"{lab}:make_any", CONTEXT, 0, privileged=secret, a=1)
    assert agent.options == {"a": 1}


@pytest.mark.parametrize("suffix, message", [
    (":make agent", "not of the form package.module:factory"),
    ("_broken:make", "module '{lab}_broken' does not import: RuntimeError: the lab module is broken"),
    ("_missing:make", "module '{lab}_missing' does not import: ModuleNotFoundError: No module named "
                      "'{lab}_missing' (is its folder on PYTHONPATH?)"),
    ("_needs:make", "module '{lab}_needs' does not import: ModuleNotFoundError: No module named "
                    "'not_installed_anywhere_xyz'"),
    (":nothing", "{lab} has no attribute 'nothing'"),
    (":Tools.nothing", "{lab} has no attribute 'Tools.nothing'"),
    (":NOT_CALLABLE", "NOT_CALLABLE (int) is not callable: a factory is (context, seed, **options) -> Agent"),
])
def test_bad_specs_say_what_is_wrong(lab, suffix, message):
    with pytest.raises(AgentError) as exc:
        resolve(lab + suffix)
    assert str(exc.value) == f"agent {lab + suffix!r}: {message.format(lab=lab)}"


def test_a_factory_must_return_an_agent(lab):
    with pytest.raises(AgentError, match=r"its factory returned a str, not an agent \(an object with name, "):
        make_agent(f"{lab}:not_an_agent", CONTEXT)


def test_options_are_checked_against_the_factory(lab):
    with pytest.raises(AgentError, match=rf"^agent '{lab}:make_agent' takes no option 'colour', 'size' "
                                         r"\(its factory's options: margin\)$"):
        check_agent(f"{lab}:make_agent", {"size": 2, "colour": "red", "margin": 1})
    assert check_agent(f"{lab}:make_any", {"anything": 1}).source == f"{lab}:make_any"
    assert check_agent(f"{lab}:make_positional", {"size": 2}).source == f"{lab}:make_positional"
    with pytest.raises(AgentError, match=r"takes no option 'margin' \(its factory's options: size\)$"):
        check_agent(f"{lab}:make_positional", {"margin": 2})
    assert check_agent("http", {"retries": 9}) is AGENTS["http"]   # built-ins: their own keywords


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(AgentError) as exc:
        resolve("nope")
    assert str(exc.value) == ("unknown agent 'nope'; known: oracle, random, ocr, http, cua, guiactor; "
                              "or one of your own as package.module:factory")


# --- entry points --------------------------------------------------------------------------

def test_entry_points_are_agents_by_name(lab, tmp_path):
    distribution(tmp_path, {"lab-centre": f"{lab}:make_agent", "lab-broken": f"{lab}_broken:make"})
    entry = resolve("lab-centre")
    assert entry.name == "lab-centre" and entry.source == f"{lab}:make_agent (lab-agents 1.2.0)"
    assert make_agent("lab-centre", CONTEXT, 1, margin=2).act({}, {}).point == (322.0, 180.0)
    with pytest.raises(AgentError) as exc:
        resolve("lab-broken")
    assert str(exc.value) == (f"entry point 'lab-broken' of lab-agents 1.2.0: agent '{lab}_broken:make': module "
                              f"'{lab}_broken' does not import: RuntimeError: the lab module is broken")
    with pytest.raises(AgentError, match="known: oracle, random, ocr, http, cua, guiactor, lab-centre, lab-broken;"):
        resolve("lab-other")


def test_a_builtin_name_is_reserved(lab, tmp_path):
    distribution(tmp_path, {"random": f"{lab}:make_agent", "lab-centre": f"{lab}:make_agent"})
    with pytest.warns(UserWarning, match=rf"entry point 'random' = '{lab}:make_agent' of lab-agents 1.2.0 is "
                                         "ignored: a built-in agent has that name"):
        agents = all_agents()
    assert agents["random"] is AGENTS["random"] and list(agents) == [*AGENTS, "lab-centre"]
    assert agents["lab-centre"].description == "Clicks the centre of the screen, `margin` pixels to the right."


def test_clinigym_agents_lists_entry_points(lab, tmp_path):
    """The command in a process of its own, the distribution found on its PYTHONPATH."""
    distribution(tmp_path, {"lab-centre": f"{lab}:make_agent"})
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "clinigym.cli", "agents", "--json"], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    listed = json.loads(out)["agents"]
    assert listed["lab-centre"]["description"] == "Clicks the centre of the screen, `margin` pixels to the right."
    assert listed["lab-centre"]["privileged"] is False


# --- the command line ----------------------------------------------------------------------

def parser():
    from clinigym.cli import runs
    p = argparse.ArgumentParser(prog="clinigym")
    runs.register(p.add_subparsers())
    return p


def parse_error(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exc:
        parser().parse_args(["run", "--out", "x", *argv])
    assert exc.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_bad_agents_are_refused_when_parsed(lab, capsys):
    assert parse_error(capsys, "--agent", f"{lab}:nothing") == \
        f"clinigym run: error: argument --agent: agent '{lab}:nothing': {lab} has no attribute 'nothing'"
    assert parse_error(capsys, "--agent", "nope").startswith(
        "clinigym run: error: argument --agent: unknown agent 'nope'; known: oracle, random,")
    assert parse_error(capsys, "--agent-option", "margin") == \
        "clinigym run: error: argument --agent-option: 'margin': not KEY=VALUE with KEY a Python name"


def test_agent_options_of_an_agent_from_outside(lab):
    from clinigym.cli import runs
    args = parser().parse_args(["run", "--out", "x", "--agent", f"{lab}:make_any", "--agent-option", "margin=3",
                                "--agent-option", "label=left side", "--agent-option", 'tags=["a", 1]',
                                "--agent-option", 'quoted="7"', "--base-url", "http://127.0.0.1:1/v1"])
    assert args.agent == f"{lab}:make_any"
    # its own options only: flags of the built-in agents are not its
    assert runs._agent_options(args) == {"margin": 3, "label": "left side", "tags": ["a", 1], "quoted": "7"}
    builtin = parser().parse_args(["run", "--out", "x", "--agent", "random", "--agent-option", "a=1"])
    with pytest.raises(AgentError, match="^--agent-option is for agents from outside clinigym; the random agent "
                                         "takes its own flags: none$"):
        runs._agent_options(builtin)


def test_parse_option():
    assert parse_option("n=1.5") == ("n", 1.5)
    assert parse_option("flag=true") == ("flag", True)
    assert parse_option("path=/tmp/a=b") == ("path", "/tmp/a=b")
    assert parse_option("empty=") == ("empty", "")
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_option("=1")
