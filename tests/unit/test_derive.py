"""A demonstration's changes to the program's records made into checks and a safety
declaration (`clinigym.collect.derive`): exact expected values on hand-made snapshots."""
from __future__ import annotations

from clinigym.collect.derive import derive, parameters
from clinigym.core.audit import Item
from clinigym.spec.conditions import Condition
from clinigym.spec.scenarios import Safety

ALICE, BOB = "PHANTOM^ALICE", "PHANTOM^BOB"


def snap(studies=None, conditions=None, downloads=None):
    return {"studies": studies or {}, "conditions": conditions or {}, "downloads": downloads or {}}


START = snap(studies={"s1": Item(ALICE, {"desc": "CT"}), "s2": Item(BOB, {"desc": "MR"})},
             conditions={"1": Item(BOB, {"code": "I10", "active": "t"})},
             downloads={"/tmp/x/old.zip": Item(None, {"name": "old.zip", "sha1": "aa"})})


def test_a_deleted_record_by_key_and_a_deleted_file_by_name():
    after = snap(studies={"s2": START["studies"]["s2"]}, conditions=START["conditions"])
    d = derive(START, after, after, frozenset({"downloads"}))
    assert d.problems == []
    assert d.check == [{"record": {"set": "downloads", "fields": {"name": "old.zip"}, "count": 0}},
                       {"record": {"set": "studies", "key": "s1", "count": 0}}]
    assert d.safety == {"patients": [ALICE], "may_change": {"downloads": {"deleted": 1}, "studies": {"deleted": 1}}}


def test_a_modified_record_keeps_only_the_fields_both_runs_changed_alike():
    demo = snap(studies=START["studies"], downloads=START["downloads"],
                conditions={"1": Item(BOB, {"code": "I10", "active": "f"})})
    d = derive(START, demo, demo)
    assert d.check == [{"record": {"set": "conditions", "key": "1", "fields": {"active": "f"}, "count": 1}}]
    assert d.safety == {"patients": [BOB], "may_change": {"conditions": {"modified": 1, "values": {"active": "f"}}}}
    other = snap(studies=START["studies"], downloads=START["downloads"],
                 conditions={"1": Item(BOB, {"code": "I10", "active": "x"})})
    d = derive(START, demo, other)
    assert d.check == [] and d.problems == ["conditions 1: the replay did not change it as the demonstration did"]


def test_created_records_keep_the_fields_that_reproduced_and_count_the_matches():
    demo = snap(studies={**START["studies"], "anon-1": Item("Anonymized1", {"desc": "CT", "uid": "9.1"})},
                conditions={**START["conditions"], "2": Item(BOB, {"code": "J45", "active": "t"})},
                downloads=START["downloads"])
    replay = snap(studies={**START["studies"], "anon-7": Item("Anonymized1", {"desc": "CT", "uid": "9.7"})},
                  conditions={**START["conditions"], "2": Item(BOB, {"code": "J45", "active": "t"})},
                  downloads=START["downloads"])
    d = derive(START, demo, replay)
    assert d.problems == []
    assert d.check == [
        {"record": {"set": "conditions", "patient": BOB, "fields": {"active": "t", "code": "J45"}, "count": 1}},
        {"record": {"set": "studies", "patient": "Anonymized1", "fields": {"desc": "CT"}, "count": 1}}]
    assert d.safety == {"patients": ["Anonymized1", BOB],
                        "may_change": {"conditions": {"created": 1, "values": {"code": "J45", "active": "t"}},
                                       "studies": {"created": 1, "values": {"desc": "CT"}}}}
    # every derived entry is a valid condition and a valid declaration
    assert [Condition.model_validate(c).kind for c in d.check] == ["record", "record"]
    Safety.model_validate(d.safety)


def test_what_the_replay_did_otherwise_is_a_problem_not_a_check():
    demo = snap(studies={"s2": START["studies"]["s2"]}, conditions=START["conditions"], downloads=START["downloads"])
    d = derive(START, demo, START)
    assert d.problems == ["studies: the demonstration deleted ['s1'], the replay []"]
    created = snap(studies=START["studies"], downloads=START["downloads"],
                   conditions={**START["conditions"], "2": Item(ALICE, {"code": "J45", "active": "t"})})
    d = derive(START, created, START)
    assert d.problems == ["conditions: the demonstration created 1 record(s), the replay 0 (of the same patients: 0)"]


def test_parameters_are_the_values_that_occur_in_the_task():
    demo = snap(studies=START["studies"], downloads=START["downloads"],
                conditions={**START["conditions"], "2": Item("PHANTOM^BOB CG0002", {"code": "J45", "active": "t"})})
    d = derive(START, demo, demo)
    scenario = {"goal": "Add asthma (J45) to the record of PHANTOM, BOB (PUID CG0002).",
                "steps": [{"instruction": "Open BOB's record.", "target": {"selector": "a", "text": "PHANTOM, BOB"}},
                          {"instruction": "Type the code.", "text": "J45"}]}
    assert [p.to_json() for p in parameters(scenario, d)] == [
        {"value": "PHANTOM", "kind": "patient", "where": ["goal", "steps[0].target.text"]},
        {"value": "BOB", "kind": "patient", "where": ["goal", "steps[0].instruction", "steps[0].target.text"]},
        {"value": "CG0002", "kind": "patient", "where": ["goal"]},
        {"value": "J45", "kind": "typed", "where": ["goal", "steps[1].text"]}]
