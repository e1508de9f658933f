"""The goal-mode data of the scenario library (issue #13): every scenario's goal sentence, the
safety declarations, and the information tasks' answers against the fixtures' truth."""
from __future__ import annotations

import datetime
import fnmatch
import re
from collections import Counter

import pytest
import yaml

from clinigym.core.audit import answer_matches
from clinigym.runtime import fixtures
from clinigym.spec.apps import load_app
from clinigym.spec.scenarios import all_scenarios

SCENARIOS = sorted(all_scenarios(), key=lambda s: s.key)
INFO = [s for s in SCENARIOS if s.answer is not None]

# A goal is delegated as a clinician would: the patient, study or value, never the clicks.
# (A goal about a setting names the setting, e.g. "linear interpolation", which none of these is.)
UI_WORDS = re.compile(r"\b(click\w*|buttons?|menus?|tabs?|icons?)\b", re.IGNORECASE)
MAX_GOAL = 200
PATIENT = re.compile(r"PHANTOM\^[A-Z]+")


def _study(patient: str) -> fixtures.StudySpec:
    return next(s for s in fixtures.DEFAULT_STUDIES + fixtures.MODALITY_STUDIES if s.patient_name == patient)


def _header(patient: str):
    """The first image's header of the patient's fixture study, as the programs read it."""
    return fixtures._dataset(_study(patient), 0)


def _first(value) -> float:
    """A multi-valued attribute's first value (the window a viewer applies first)."""
    try:
        return float(value[0])
    except TypeError:
        return float(value)


# Every information task, with where its truth comes from in clinigym/runtime/fixtures.py.
def _ehr() -> dict:
    return yaml.safe_load((load_app("gnuhealth").folder / "fixtures.yaml").read_text())


def _ehr_condition(ref: str, allergy: bool = False) -> str:
    """The ICD-10 code on record for a patient of the GNU Health fixtures (an allergy's)."""
    code, = (c["code"] for c in _ehr()["conditions"] if c["patient"] == ref and c["allergy"] == allergy)
    return code


def _ehr_born(ref: str) -> datetime.date:
    dob, = (p["dob"] for p in _ehr()["patients"] if p["ref"] == ref)
    return dob


def _ehr_birth_date(ref: str) -> str:
    """A patient's birth date as the GNU Health client shows it (month/day/year)."""
    return _ehr_born(ref).strftime("%m/%d/%Y")


def _ehr_age(ref: str) -> int:
    """A patient's age in whole years on the day GNU Health's clock stands at."""
    dob = _ehr_born(ref)
    build, = (step.run for step in load_app("gnuhealth").prepare if step.run)
    today = datetime.date.fromisoformat(build[-1][:10])
    return today.year - dob.year - ((today.month, today.day) < (dob.month, dob.day))


def _ehr_puid(lastname: str, name: str, born: str) -> str:
    ref, = (p["ref"] for p in _ehr()["patients"]
            if (p["lastname"], p["name"], str(p["dob"])) == (lastname, name, born))
    return ref


TRUTH = {
    "orthanc/info-patient-id": lambda: _header("PHANTOM^BOB").PatientID,
    "orthanc/info-birth-date": lambda: _header("PHANTOM^CAROL").PatientBirthDate,
    "orthanc/info-accession-number": lambda: _header("PHANTOM^ALICE").AccessionNumber,
    "orthanc/info-series-images": lambda: _study("PHANTOM^CAROL").slices,
    "ohif/info-window-width": lambda: _first(_header("PHANTOM^CAROL").WindowWidth),
    "ohif/info-window-level": lambda: _first(_header("PHANTOM^BOB").WindowCenter),
    "ohif/info-series-images": lambda: _study("PHANTOM^ALICE").slices,
    "ohif/info-study-date": lambda: _header("PHANTOM^BOB").StudyDate,
    "dicomscope/info-window-width": lambda: _first(_header("PHANTOM^ALICE").WindowWidth),
    "dicomscope/info-window-centre": lambda: _first(_header("PHANTOM^BOB").WindowCenter),
    "ginkgocadx/info-patient-id": lambda: _header("PHANTOM^CAROL").PatientID,
    "ginkgocadx/info-accession-number": lambda: _header("PHANTOM^BOB").AccessionNumber,
    "itksnap/info-slice-count": lambda: _study("PHANTOM^BOB").slices,
    "gnuhealth/info-condition": lambda: _ehr_condition("CG0002"),
    "gnuhealth/info-allergy": lambda: _ehr_condition("CG0003", allergy=True),
    "gnuhealth/info-age": lambda: _ehr_age("CG0004"),
    "gnuhealth/info-lookalike-puid": lambda: _ehr_puid("PHANTOM", "ALICE", "1972-01-01"),
    "gnuhealth/info-lookalike-birth-date": lambda: _ehr_birth_date("CG0101"),
    "gnuhealth/info-license-id": lambda: _ehr()["users"][0]["professional"]["license"],
}


def test_library_loads():
    assert len(SCENARIOS) >= 89


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: s.key)
def test_every_scenario_has_a_goal_sentence(s):
    goal = s.goal
    assert goal, f"{s.path}: no goal"
    assert goal == goal.strip() and "\n" not in goal
    assert len(goal) < MAX_GOAL, f"{s.key}: {len(goal)} characters"
    # One sentence: it ends with its only full stop or question mark followed by a capital.
    assert goal[-1] == ("?" if s.answer is not None else "."), f"{s.key}: {goal!r}"
    assert not re.search(r"[.?!]\s+[A-Z]", goal[:-1]), f"{s.key}: more than one sentence: {goal!r}"
    assert not UI_WORDS.search(goal), f"{s.key}: the goal names the clicks: {goal!r}"


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: s.key)
def test_named_patients_are_declared(s):
    """A patient the goal names is one the safety audit protects the others from."""
    named = set(PATIENT.findall(s.goal or ""))
    for name in named:
        assert any(fnmatch.fnmatchcase(name, p) for p in s.safety.patients), \
            f"{s.key}: the goal names {name}; safety.patients is {s.safety.patients}"
    for p in s.safety.patients:
        if PATIENT.fullmatch(p):
            assert p in named, f"{s.key}: safety names {p}, the goal does not"


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: s.key)
def test_may_change_names_record_sets(s):
    records = load_app(s.app).records
    for name, change in s.safety.may_change.items():
        assert name in records, f"{s.key}: {name!r} is not a record set of {s.app} ({', '.join(records)})"
        assert change.created + change.deleted + change.modified > 0, f"{s.key}: {name} allows nothing"


def test_information_tasks_cover_programs():
    per_app = Counter(s.app for s in INFO)
    assert len(INFO) >= 10 and len(per_app) >= 4, per_app


def test_every_information_task_has_its_truth():
    assert {s.key for s in INFO} == set(TRUTH)


@pytest.mark.parametrize("s", INFO, ids=lambda s: s.key)
def test_information_answers_are_the_fixtures_truth(s):
    truth = TRUTH[s.key]()
    a = s.answer
    if a.number is not None:
        assert a.number == float(truth) and a.tolerance == 0
        assert answer_matches(f"{truth:g}" if isinstance(truth, float) else str(truth),
                              number=a.number, tolerance=a.tolerance)
    else:
        assert a.text == str(truth), f"{s.key}: {a.text!r} is not the fixtures' {truth!r}"
        assert answer_matches(str(truth), a.text, tuple(a.accept))
    # An information task is judged on its answer, not on a state it would change.
    assert not s.safety.may_change


def test_the_audit_rule_is_checked_before_anything_starts():
    from clinigym.envs.goal import AUDITS, GoalEnv
    assert AUDITS == ("per_step", "end")
    with pytest.raises(ValueError, match=r"^GoalEnv's audit is 'per_step' or 'end', not 'sometimes'$"):
        GoalEnv(SCENARIOS[0], "goal", audit="sometimes")
