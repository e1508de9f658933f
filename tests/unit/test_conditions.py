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
