"""A scenario's start state on its program: the pristine program (backend reset with the
scenario's arguments), then its unscored set-up actions, each waited for."""
from __future__ import annotations

from clinigym.core.screen import Frame, changed_pixels
from clinigym.runtime.backends import Backend
from clinigym.runtime.fixtures import StudySpec
from clinigym.runtime.waiting import wait_for
from clinigym.spec.conditions import holds
from clinigym.spec.scenarios import Scenario, SetupStep


def start_scenario(backend: Backend, scenario: Scenario, instance: tuple[StudySpec, ...] = ()) -> Frame:
    """The settled screen of the scenario's start state; `instance`: a family instance's
    generated studies, loaded into the program at its reset."""
    frame = backend.reset(scenario.args, instance)
    for i, setup in enumerate(scenario.setup):
        frame = _run_setup(backend, i, setup, frame)
    return frame


def _run_setup(backend: Backend, i: int, setup: SetupStep, frame: Frame) -> Frame:
    display = backend.display
    if setup.action == "key":
        display.key(setup.keys)
    elif setup.action != "wait":
        box = wait_for(lambda: backend.resolve(setup.target), 10, f"set-up step {i + 1} target")
        end = backend.resolve(setup.end_target) if setup.end_target else None
        display.perform(setup.action, box.center, end.center if end else None, setup.text)
    settle = backend.app.settle
    if setup.until:
        def reached() -> bool:
            now = display.grab()
            return all(holds(c, backend, frame, now, settle.min_changed) for c in setup.until)
        wait_for(reached, settle.timeout,
                 f"set-up step {i + 1}: {'; '.join(c.describe() for c in setup.until)}")
    if setup.action == "wait" and changed_pixels(display.grab().raw, frame.raw) <= settle.min_changed:
        return frame   # what it waited for was on the settled screen already: nothing to settle again
    return backend.settle(since=frame)[0]
