"""The file and exit conditions against a probe over a real folder (pure logic)."""
from __future__ import annotations

import glob
from pathlib import Path

import pytest

from clinigym.spec.conditions import Condition, holds
from clinigym.spec.files import SpecError
from clinigym.spec.scenarios import load_scenario


class FolderProbe:
    def __init__(self, folder: Path, statuses: dict[str, int | None]):
        self.folder, self.statuses = folder, statuses

    def state_glob(self, pattern: str) -> list[str]:
        return glob.glob(str(self.folder / pattern))

    def exit_status(self, process: str) -> int | None:
        return self.statuses.get(process)


def test_file_contains(tmp_path):
    (tmp_path / "prefs").mkdir()
    (tmp_path / "prefs" / "a.xml").write_text("<entry key='Zoom' value='1'/>")
    (tmp_path / "prefs" / "b.xml").write_text("<entry key='Zoom' value='2'/>")
    probe = FolderProbe(tmp_path, {})
    assert holds(Condition(file_contains={"path": "prefs/*.xml", "text": "value='2'"}), probe)
    assert not holds(Condition(file_contains={"path": "prefs/*.xml", "text": "value='3'"}), probe)
    # a folder matching the glob is not read
    assert not holds(Condition(file_contains={"path": "pref*", "text": "Zoom"}), probe)


@pytest.mark.parametrize("statuses, expected", [
    ({"itksnap": 0}, True), ({"itksnap": 1}, False), ({"itksnap": None}, False), ({}, False)])
def test_exited(tmp_path, statuses, expected):
    assert holds(Condition(exited="itksnap"), FolderProbe(tmp_path, statuses)) is expected


def test_exited_only_in_last_step(tmp_path):
    path = tmp_path / "quit-early.yaml"
    path.write_text("""app: itksnap
overview: Quit, then click.
steps:
  - {instruction: Quit., action: click, target: {box: [0, 0, 9, 9]}, transition: {exited: itksnap}}
  - {instruction: Click., action: click, target: {box: [0, 0, 9, 9]}, transition: {window: x}}
""")
    with pytest.raises(SpecError, match=r"steps\[0\]: `exited` belongs only in the last step"):
        load_scenario(path)


class RecordsProbe:
    """The records a program's readers would answer (`clinigym.spec.record_sources`)."""
    def __init__(self, sets):
        self.sets = sets

    def records(self, name):
        return self.sets[name]


def test_record_counts_the_records_that_match_key_patient_and_values():
    from clinigym.core.audit import Item
    probe = RecordsProbe({"conditions": {"1": Item("PHANTOM^BOB CG0002", {"code": "J45", "active": "t"}),
                                         "2": Item("PHANTOM^ALICE CG0001", {"code": "J45", "active": "f"})}})

    def count(**given):
        return [n for n in range(3) if holds(Condition(record={"set": "conditions", **given, "count": n}), probe)]
    assert count() == [2]
    assert count(fields={"code": "J45"}) == [2]
    assert count(fields={"code": "J45", "active": "t"}) == [1]
    assert count(patient="phantom bob cg0002") == [1]   # names compare as the audit compares them
    assert count(key="2", fields={"active": "t"}) == [0]
    assert count(key="3") == [0]


def test_a_record_check_names_a_record_set_of_its_program(tmp_path):
    path = tmp_path / "no-such-set.yaml"
    path.write_text("""app: orthanc
overview: Delete a study.
steps:
  - {instruction: Click., action: click, target: {box: [0, 0, 9, 9]}, transition: {window: x}}
check:
  - record: {set: series, key: abc, count: 0}
""")
    with pytest.raises(SpecError, match=r"check\[0\].record: 'series' is not a record set of orthanc \(its records: "
                                        r"patients, studies, downloads\)"):
        load_scenario(path)
