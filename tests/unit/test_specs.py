"""Malformed program and scenario files fail at load with the file, the field and the problem."""
from pathlib import Path

import pytest

from clinigym.spec.apps import app_names, load_app
from clinigym.spec.files import SpecError
from clinigym.spec.scenarios import all_scenarios, first_per_program, load_scenario

GOOD = """
app: orthanc
overview: Open the patient list.
steps:
  - instruction: Click on 'All patients'.
    action: click
    target: {selector: "a[href='#find-patients']"}
    transition: {dom_visible: "#find-patients.ui-page-active"}
"""


def write(tmp_path: Path, text: str, name="case.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_shipped_file_loads():
    assert {"orthanc", "dicomscope", "aeskulap"} <= set(app_names())
    for name in app_names():
        assert load_app(name).name == name
    scenarios = all_scenarios()
    for app in ("orthanc", "dicomscope", "aeskulap"):
        assert len([s for s in scenarios if s.app == app]) >= 3, app
    # MedSPOT's tasks have 1 to 10 steps; so do the scenarios that reproduce them.
    assert all(1 <= len(s.steps) <= 10 for s in scenarios)


def test_good_scenario_loads(tmp_path):
    s = load_scenario(write(tmp_path, GOOD))
    assert s.id == "case" and s.steps[0].action == "click"


def test_setup_until_one_or_a_list(tmp_path):
    setup = ("setup:\n  - action: click\n    target: {box: [1, 1, 5, 5]}\n"
             "    until: {window: ^A$}\n  - action: click\n    target: {box: [1, 1, 5, 5]}\n"
             "    until: [{window: ^B$}, {no_window: ^C$}]\n")
    s = load_scenario(write(tmp_path, GOOD.replace("steps:", setup + "steps:")))
    assert [[c.describe() for c in st.until] for st in s.setup] == [
        ["window: ^A$"], ["window: ^B$", "no_window: ^C$"]]


@pytest.mark.parametrize("old,new,field,problem", [
    ("action: click", "action: clack", "steps[0].action", "Input should be"),
    ("target: {selector: \"a[href='#find-patients']\"}", "target: {}", "steps[0].target", "exactly one of"),
    ("target: {selector: \"a[href='#find-patients']\"}", "target: {box: [10, 10, 5, 20]}",
     "steps[0].target", "x1 < x2"),
    ("    transition: {dom_visible: \"#find-patients.ui-page-active\"}\n", "", "steps[0].transition",
     "Field required"),
    ("app: orthanc", "app: nosuchapp", "app", "unknown program"),
    ("overview: Open the patient list.", "overview: Open.\ncolour: red", "colour", "unknown field"),
    ("    action: click", "    action: drag", "steps[0]", "needs end_target"),
    ("overview: Open the patient list.", "overview: Open.\nwall_clock: [[10, 10, 5, 20]]", "wall_clock",
     "[0]: a box is [x1, y1, x2, y2] with 0 <= x1 < x2"),
    ("overview: Open the patient list.", "overview: Open.\nwall_clock: [[0, 0, 5, 20], [1, 2, 3]]", "wall_clock",
     "[1]: a box is"),
])
def test_malformed_scenario_names_file_field_problem(tmp_path, old, new, field, problem):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(SpecError) as err:
        load_scenario(path)
    assert err.value.path == str(path.resolve())
    assert err.value.field == field
    assert problem in err.value.problem
    assert str(path.resolve()) in str(err.value) and field in str(err.value)


def test_not_yaml(tmp_path):
    path = write(tmp_path, "app: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_scenario(path)


def test_steps_missing(tmp_path):
    path = write(tmp_path, "app: orthanc\noverview: x\nsteps: []\n")
    with pytest.raises(SpecError) as err:
        load_scenario(path)
    assert err.value.field == "steps"


def test_first_per_program():
    every = all_scenarios()
    picked = first_per_program(every, 2)
    for app in {s.app for s in every}:
        keys = sorted(s.key for s in every if s.app == app)
        assert [s.key for s in picked if s.app == app] == keys[:2]


def refused_then_loaded(tmp_path: Path, processes: str, bad: str, good: str, field: str, problem: str):
    """A program file (its `processes:` and what follows) refused with `problem` at `field`,
    then loaded once `bad` is replaced by `good`: the loaded program."""
    from clinigym.spec.apps import _load
    folder = tmp_path / "lab"
    folder.mkdir()
    path = write(folder, "name: lab\ntitle: Lab\nprocesses:\n" + processes, "app.yaml")
    with pytest.raises(SpecError) as err:
        _load(path)
    assert err.value.field == field and problem in err.value.problem
    path.write_text(path.read_text().replace(bad, good))
    return _load(path)


@pytest.mark.parametrize("bad, problem, good, expected", [
    ("idle_quiet: 0.5", "idle_quiet (0.5) must be shorter than quiet (0.5)", "idle_quiet: 0.15",
     (0.5, 0.15, 0.05, None)),
    ("timer_horizon: 1.5", "timer_horizon needs an idle_quiet", "idle_quiet: 0.2, timer_horizon: 1.5",
     (0.5, 0.2, 0.05, 1.5)),
    ("idle_quiet: 0.2, timer_futex: true", "timer_futex and timer_ignore need a timer_horizon",
     "idle_quiet: 0.2, timer_horizon: 0.4, timer_futex: true", (0.5, 0.2, 0.05, 0.4)),
    ("idle_quiet: 0.2, timer_horizon: 0.4, timer_ignore: '^(VM '",
     "timer_ignore is not a regular expression: missing ), unterminated subpattern",
     "idle_quiet: 0.2, timer_horizon: 0.4, timer_ignore: '^(VM |GC )'", (0.5, 0.2, 0.05, 0.4)),
])
def test_idle_window_rules(tmp_path, bad, problem, good, expected):
    """The idle window is shorter than quiet; the timer look needs an idle window."""
    settle = refused_then_loaded(tmp_path, "  - {name: lab, command: [xmessage, hi]}\n"
                                 f"settle: {{quiet: 0.5, {bad}}}\n", bad, good, "settle", problem).settle
    assert (settle.quiet, settle.idle_quiet, settle.idle_cpu, settle.timer_horizon) == expected


@pytest.mark.parametrize("box, problem", [
    ("[0, 104, 0, 142]", "not a box [x1, y1, x2, y2] with 0 <= x1 < x2 and 0 <= y1 < y2: [0, 104, 0, 142]"),
    ("[10, 50, 300, 20]", "not a box [x1, y1, x2, y2] with 0 <= x1 < x2 and 0 <= y1 < y2: [10, 50, 300, 20]"),
    ("[-5, 0, 300, 20]", "not a box [x1, y1, x2, y2] with 0 <= x1 < x2 and 0 <= y1 < y2: [-5, 0, 300, 20]"),
])
def test_painted_is_a_box(tmp_path, box, problem):
    """An empty `painted` box would hold every reset to its timeout: refused at load."""
    app = refused_then_loaded(tmp_path, f"  - {{name: lab, command: [xmessage, hi], ready: {{painted: {box}}}}}\n",
                              box, "[0, 104, 300, 142]", "processes[0].ready.painted", problem)
    assert app.processes[0].ready.painted == [0, 104, 300, 142]


def test_a_scenario_cannot_point_gnu_health_s_client_off_the_machine(tmp_path):
    step = "  - {instruction: Click., action: click, target: {box: [0, 0, 9, 9]}, transition: {window: x}}\n"
    for name, url in (("demo", "gnuhealth://demo.gnuhealth.org:8000/health50"),
                      ("model", "gnuhealth://127.0.0.1:${PORT_TRYTON}/gnuhealth_${PORT_TRYTON}/model/gnuhealth.patient")):
        (tmp_path / f"{name}.yaml").write_text(f"app: gnuhealth\noverview: Open.\nargs: ['{url}']\nsteps:\n{step}")
    with pytest.raises(SpecError, match=r"args\[0\]: 'gnuhealth://demo.gnuhealth.org:8000/health50' does not "
                                        r"match client's `args_match`"):
        load_scenario(tmp_path / "demo.yaml")
    assert load_scenario(tmp_path / "model.yaml").args == [
        "gnuhealth://127.0.0.1:${PORT_TRYTON}/gnuhealth_${PORT_TRYTON}/model/gnuhealth.patient"]


def test_default_args_go_with_the_main_process(tmp_path):
    from clinigym.spec.apps import _load
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "app.yaml").write_text("name: x\ntitle: X\nprocesses:\n  - {name: server, command: [s], "
                                             "default_args: [x]}\n  - {name: client, command: [c]}\n")
    with pytest.raises(SpecError, match="process 'server': default_args and args_match go with the main"):
        _load(tmp_path / "x" / "app.yaml")


def test_a_wait_set_up_step_has_only_its_until():
    from clinigym.spec.scenarios import SetupStep
    step = SetupStep.model_validate({"action": "wait", "until": {"window": "^Patients$"}})
    assert (step.target, [c.describe() for c in step.until]) == (None, ["window: ^Patients$"])
    for bad in ({"action": "wait"}, {"action": "wait", "until": {"window": "x"}, "target": {"box": [0, 0, 9, 9]}}):
        with pytest.raises(ValueError, match="a wait set-up step takes no target and needs until"):
            SetupStep.model_validate(bad)
