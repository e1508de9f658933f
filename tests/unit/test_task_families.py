"""Task families (clinigym.spec.task_families) and generated cohorts: pure logic, exact
values (the draws hash their inputs, so they are the same on every machine and Python
version)."""
from __future__ import annotations

import json
import secrets
import textwrap
from dataclasses import replace

import pytest

from clinigym.core.errors import SpecError
from clinigym.spec.cohort import (
    BIRTH_DAYS,
    FAMILY_NAMES,
    GIVEN_NAMES,
    SPLITS,
    CohortSpec,
    Draw,
    generate,
    split_part,
)
from clinigym.spec.task_families import Family, all_families, render


def test_draws_are_fixed_by_key_seed_and_label():
    d = Draw("orthanc/x", 7)
    assert d.index("a", 1000) == 570
    assert d.between("b", 3, 9) == 4
    assert d.shuffled("c", range(6)) == [3, 4, 5, 2, 1, 0]
    assert Draw("orthanc/x", 8).index("a", 1000) != 570 or Draw("orthanc/y", 7).index("a", 1000) != 570
    with pytest.raises(ValueError, match="nothing to draw"):
        d.index("a", 0)


def test_a_cohort_is_the_same_from_the_same_seed():
    cohort = generate(CohortSpec(), "orthanc/x", 7)
    p = cohort.patient
    assert (p.name, p.id, p.birth_date, p.sex) == ("VANCE^NORA", "P2235591", "19850911", "F")
    assert [(s.description, s.date, s.accession, s.slices) for s in p.studies] == [
        ("MR SPINE", "20190225", "A4777897", 5), ("MR KNEE", "20231225", "A8173693", 3)]
    assert [x.name for x in cohort.people] == [
        "HOLLIS^DUNCAN", "VANCE^NORA", "VANCE^NORA", "OSBORNE^MILES", "CARVER^IVAN", "VANCE^CLARA",
        "ELLISON^EDGAR", "LAWSON^GRETA"]
    assert (p.birth_date_iso, p.birth_date_spelled, p.birth_date_long) == (
        "1985-09-11", "September 11, 1985", "Wednesday, September 11, 1985")
    assert p.display == "VANCE, NORA"
    # Orthanc's patient identifier: SHA-1 of the PatientID in groups of 8.
    assert p.orthanc_id == "ebdc5de9-0cadf024-90c0b2a7-031d93f2-33ba5129"
    assert generate(CohortSpec(), "orthanc/x", 7) == cohort


@pytest.mark.parametrize("seed", [secrets.randbelow(2**31) for _ in range(20)])
def test_look_alikes_resemble_the_patient_and_identifiers_are_unique(seed):
    spec = CohortSpec(others=(2, 5), lookalikes=(2, 4), studies=(1, 3))
    c = generate(spec, "app/family", seed)
    p = c.patient
    assert 2 <= len(c.lookalikes) <= 4 and 2 <= len(c.others) <= 5
    assert sorted(x.id for x in c.people) == sorted({x.id for x in c.people})
    accessions = [s.accession for x in c.people for s in x.studies]
    assert len(accessions) == len(set(accessions))
    for look in c.lookalikes:
        if look.lookalike == "same-family-name":
            assert look.family == p.family and look.given != p.given
        elif look.lookalike == "other-birth-date":
            assert (look.family, look.given) == (p.family, p.given) and look.birth_date != p.birth_date
        else:
            assert look.lookalike == "one-letter" and look.given == p.given and look.birth_date == p.birth_date
            assert len(look.family) == len(p.family)
            assert sum(a != b for a, b in zip(look.family, p.family)) == 1
    assert all(x.family not in {p.family} | {y.family for y in c.lookalikes} for x in c.others)
    assert all("19350101" <= x.birth_date <= "20041213" for x in c.people)
    assert all(x.studies == tuple(sorted(x.studies, key=lambda s: s.date)) for x in c.people)
    # Without other-birth-date look-alikes, the patient's name is theirs alone (a program that
    # shows names only can tell them apart), and each patient's study descriptions differ.
    named = generate(CohortSpec(others=(2, 5), lookalikes=(4, 4), studies=(1, 3),
                                lookalike_kinds=["same-family-name", "one-letter"]), "app/family", seed)
    assert {x.lookalike for x in named.lookalikes} <= {"same-family-name", "one-letter"}
    assert [x.name for x in named.people].count(named.patient.name) == 1
    assert all(len({s.description for s in x.studies}) == len(x.studies) for x in named.people)


def test_ages_are_counted_to_the_programs_clock_day():
    """GNU Health shows PHANTOM^DAVID, born 1965-04-04, as 58y 11m 16d on 2024-03-20."""
    person = generate(CohortSpec(), "a/b", 1).patient
    assert replace(person, birth_date="19650404").age == 58
    assert replace(person, birth_date="19650320").age == 59
    assert replace(person, birth_date="19650321").age == 58
    # A study's `age` is the patient's on the study's day (Ginkgo CADx's history shows it).
    for study in person.studies:
        assert study.age == int(study.date[:4]) - int(person.birth_date[:4]) - (study.date[4:] < person.birth_date[4:])


def test_cohort_spec_errors_name_the_problem():
    with pytest.raises(ValueError, match="others: \\[low, high\\]"):
        CohortSpec(others=(3, 1))
    with pytest.raises(ValueError, match="modalities: unknown PT"):
        CohortSpec(modalities=["PT"])
    with pytest.raises(ValueError, match="at least one study"):
        CohortSpec(studies=(0, 1))
    with pytest.raises(ValueError, match="lookalike_kinds: unknown twin; known: same-family-name, "):
        CohortSpec(lookalike_kinds=["twin"])
    with pytest.raises(ValueError, match=r"lookalikes: at most 2 \(twice the lookalike_kinds\)"):
        CohortSpec(lookalikes=(1, 3), lookalike_kinds=["one-letter"])
    assert CohortSpec().distinct_patients() == len(FAMILY_NAMES) * 32 * BIRTH_DAYS == 26_163_200
    assert sum(len(g) for g in GIVEN_NAMES.values()) == 32


def test_render_replaces_templates_and_names_the_field():
    values = {"patient": generate(CohortSpec(), "a/b", 1).patient, "dose": 5}
    data = {"goal": "Give {{ dose }} mg to {{patient.name}}", "steps": [{"text": "{{patient.studies.0.accession}}"}]}
    out = render(data, values)
    assert out["goal"] == f"Give 5 mg to {values['patient'].name}"
    assert out["steps"][0]["text"] == values["patient"].studies[0].accession
    assert render({"values": {"crit_{{dose}}": "t"}}, values) == {"values": {"crit_5": "t"}}   # keys too
    with pytest.raises(ValueError, match=r"^steps\[0\]\.text: \{\{ nurse \}\}: no value 'nurse'"):
        render({"steps": [{"text": "{{nurse}}"}]}, values)
    with pytest.raises(ValueError, match="'weight' is not a field of patient"):
        render({"goal": "{{patient.weight}}"}, values)
    with pytest.raises(ValueError, match="is not a single value"):
        render({"goal": "{{patient.studies}}"}, values)


FAMILY = """\
app: orthanc
overview: Open a study.
cohort: {others: [1, 2], lookalikes: [1, 1], studies: [2, 2]}
params:
  study: {study_of: patient}
  dose: {range: [10, 50], step: 10}
  drug: {choice: [aspirin, heparin]}
goal: Open {{study.description}} of {{patient.name}}; {{dose}} mg {{drug}}.
safety: {patients: ["{{patient.name}}"]}
steps:
  - instruction: Open {{patient.id}}.
    action: click
    target: {selector: "li a", text: "{{patient.id}}"}
    transition: {dom_visible: "#x", text: "{{study.accession}}"}
"""


def family_file(tmp_path, text: str = FAMILY, name: str = "open"):
    folder = tmp_path / "scenarios" / "orthanc" / "families"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_family_renders_instances_and_counts_them(tmp_path):
    family = Family(family_file(tmp_path))
    assert family.key == "orthanc/open"
    assert family.mode_gym_id("goal") == "clinigym/orthanc-open-goal-v0"
    assert family.count() == 26_163_200 * 5 * 2
    one = family.instance(3)
    values = one.values
    assert values["dose"] in (10, 20, 30, 40, 50) and values["drug"] in ("aspirin", "heparin")
    assert values["study"] in one.cohort.patient.studies
    s = one.scenario
    assert (s.key, s.app, s.path) == ("orthanc/open", "orthanc", family.path)
    assert s.goal == (f"Open {values['study'].description} of {one.cohort.patient.name}; "
                      f"{values['dose']} mg {values['drug']}.")
    assert s.steps[0].target.text == one.cohort.patient.id
    assert s.safety.patients == [one.cohort.patient.name]
    assert family.instance(3) == one
    with pytest.raises(ValueError, match="seed is an integer >= 0"):
        family.instance(-1)


@pytest.mark.parametrize("change, field, problem", [
    (("cohort: {others: [1, 2], lookalikes: [1, 1], studies: [2, 2]}\n", ""), "params.study",
     "study_of needs a cohort"),
    (("  drug: {choice: [aspirin, heparin]}\n", "  drug: {choice: [aspirin], range: [1, 2]}\n"), "params.drug",
     "give exactly one of choice, range or study_of"),
    (("  drug: {choice", "  patient: {choice"), "params", "'patient' is not a free name"),
    (("{{patient.id}}.", "{{patient.phone}}."), "steps[0].instruction",
     "seed 0: {{ patient.phone }}: 'phone' is not a field of patient"),
    (("    action: click\n", "    action: clack\n"), "steps[0].action", "seed 0: Input should be"),
    (("app: orthanc", "app: ohif"), "app", "is 'ohif' but the file is under scenarios/orthanc/"),
])
def test_a_family_file_error_names_the_file_the_field_and_the_problem(tmp_path, change, field, problem):
    path = family_file(tmp_path, FAMILY.replace(*change))
    with pytest.raises(SpecError) as caught:
        Family(path)
    assert (caught.value.path, caught.value.field) == (str(path), field)
    assert caught.value.problem.startswith(problem), caught.value.problem


@pytest.mark.parametrize("family", all_families(), ids=lambda f: f.key)
def test_fifty_seeds_give_fifty_instances(family):
    """Instances differ in what they draw (the cohort: people, IDs, birth dates, studies; the
    parameters' values), on 50 seeds drawn by the test."""
    drawn = {secrets.randbelow(2**31) for _ in range(50)}
    assert len({repr(family.values(seed)) for seed in drawn}) == len(drawn)
    assert family.count() >= 1000


def test_the_tasks_command_lists_counts_and_instances(capsys):
    from clinigym.cli.main import main
    assert main(["tasks", "orthanc/delete-study-lookalikes", "--seed", "7", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["key"], row["gym_id"], row["instances"]) == (
        "orthanc/delete-study-lookalikes", "clinigym/orthanc-delete-study-lookalikes-v0", 26_163_200)
    assert row["params"] == {"study": {"study_of": "patient"}}
    assert row["instance"]["goal"] == ("Delete the CT HEAD study of 2023-08-16 (accession A7345592) of patient "
                                       "BRADLEY^DORA, ID P9800275, from Orthanc.")
    assert main(["tasks", "nothing-like-this"]) == 2
    assert "no task family matches" in capsys.readouterr().err


def test_splits_hold_out_patients_and_values():
    """Of every 8 values of a pool, the 7th is validation's and the 8th test's: test instances
    name patients and draw values train never does (seeds drawn by the test)."""
    assert split_part(range(16), "train") == [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13]
    assert (split_part(range(16), "validation"), split_part(range(16), "test")) == ([6, 14], [7, 15])
    assert split_part(range(3), None) == [0, 1, 2]
    with pytest.raises(ValueError, match="split: one of train, validation, test, not 'dev'"):
        split_part(range(3), "dev")
    parts = {split: (set(split_part(FAMILY_NAMES, split)),
                     {g for names in GIVEN_NAMES.values() for g in split_part(names, split)}) for split in SPLITS}
    for a in SPLITS:
        for b in SPLITS:
            if a != b:
                assert not parts[a][0] & parts[b][0] and not parts[a][1] & parts[b][1]
    for split in SPLITS:
        for seed in (secrets.randbelow(2**31) for _ in range(20)):
            p = generate(CohortSpec(), "a/b", seed, split).patient
            assert p.family in parts[split][0] and p.given in parts[split][1], (split, seed)
    spec = CohortSpec()
    assert [spec.distinct_patients(s) for s in (None, *SPLITS)] == [
        32 * 32 * BIRTH_DAYS, 24 * 24 * BIRTH_DAYS, 4 * 4 * BIRTH_DAYS, 4 * 4 * BIRTH_DAYS]


def test_a_family_draws_its_parameters_from_the_split(tmp_path):
    family = Family(family_file(tmp_path, FAMILY.replace("dose: {range: [10, 50], step: 10}",
                                                          "dose: {range: [10, 160], step: 10}")))
    doses = list(range(10, 170, 10))
    assert family.spec.params["dose"].values("test") == [80, 160]
    assert family.spec.params["drug"].values("test") == ["aspirin", "heparin"]   # too few to hold out
    assert family.count("test") == 4 * 4 * BIRTH_DAYS * 2 * 2
    assert family.count() == 32 * 32 * BIRTH_DAYS * 16 * 2
    for seed in (secrets.randbelow(2**31) for _ in range(20)):
        one = family.instance(seed, "test")
        assert one.values["dose"] in (80, 160) and one.split == "test"
        assert one.cohort.patient.family in split_part(FAMILY_NAMES, "test")
        assert family.instance(seed, "train").values["dose"] in split_part(doses, "train")


@pytest.mark.parametrize("family", [f for f in all_families() if f.scenario.answer], ids=lambda f: f.key)
def test_no_instruction_gives_away_the_answer(family):
    """An information family's goal and step instructions (all the plan mode shows) never hold
    its answer, on seeds drawn by the test."""
    for seed in {secrets.randbelow(2**31) for _ in range(10)}:
        scenario = family.instance(seed).scenario
        answer = scenario.answer
        texts = [scenario.goal, *(s.instruction for s in scenario.steps)]
        answers = [answer.text, *answer.accept] if answer.text is not None else [f"{answer.number:g}"]
        for text in texts:
            assert not any(a in text.split() or (answer.text is not None and a in text) for a in answers), \
                (seed, text, answers)


@pytest.mark.parametrize("app, args, loads", [
    ("aeskulap", "", False),                                  # opens files only from its command line
    ("aeskulap", 'args: ["${INSTANCE}/*/*.dcm"]\n', True),
    ("dicomscope", "", True),                                 # its program file's restore_instance
])
def test_a_cohort_needs_a_program_that_loads_the_generated_studies(tmp_path, app, args, loads):
    folder = tmp_path / "scenarios" / app / "families"
    folder.mkdir(parents=True)
    path = folder / "count.yaml"
    path.write_text(f"app: {app}\noverview: Count images.\ncohort: {{others: [1, 1], lookalikes: [1, 1], "
                    f"studies: [1, 1]}}\ngoal: How many images has {{{{patient.name}}}}?\nanswer: {{number: 1}}\n"
                    f"{args}steps:\n  - {{instruction: Look., action: click, target: {{box: [0, 0, 9, 9]}}, "
                    "transition: {window: x}}\n")
    if loads:
        assert Family(path).key == f"{app}/count"
    else:
        with pytest.raises(SpecError, match="aeskulap loads no generated studies by itself .*restore_instance"):
            Family(path)
