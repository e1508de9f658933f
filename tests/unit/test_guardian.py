"""The guardian's pure parts: close notes of work folders (written whole, read once, run where
their backend ran them), which folders a sweep takes, and waiting for an owner's end."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from clinigym.runtime import guardian, slots
from clinigym.runtime.slots import CLOSE_NOTE, CloseNote


@pytest.fixture()
def root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(slots, "ROOT", tmp_path)
    return tmp_path


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def folder(root: Path, name: str, owner: int | None) -> Path:
    path = root / name
    path.mkdir()
    if owner is not None:
        (path / "owner").write_text(str(owner))
    return path


def test_left_folders_are_slots_and_owned_folders_of_the_owners(root):
    gone = dead_pid()
    slot = folder(root, "clinigym-orthanc-3", gone)
    collect = folder(root, "clinigym-collect-orthanc-k2j4x9_a", gone)
    folder(root, "clinigym-orthanc-4", os.getpid())                  # its owner lives
    folder(root, "clinigym-view-12345678", None)                     # a temporary folder's digits, no owner
    folder(root, "clinigym-display-ab12cd34", None)                  # a display's: kill_owned's
    cut = folder(root, "clinigym-ohif-0", None)                      # a claim cut short
    assert slots._left(None) == sorted([collect, cut, slot])
    assert slots._left({gone}) == sorted([collect, slot])
    assert slots._left({os.getpid()}) == [root / "clinigym-orthanc-4"]


def test_a_close_note_is_written_whole_and_run_once(root):
    work = folder(root, "clinigym-gnuhealth-0", dead_pid())
    backend = SimpleNamespace(app=SimpleNamespace(close=[["drop", "${PORT}"]]), state=work / "state", workdir=work,
                              render=lambda a: a.replace("${PORT}", "23840"))
    slots.note_close(backend, {"TZ": "UTC"})
    assert json.loads((work / CLOSE_NOTE).read_text()) == {
        "commands": [["drop", "23840"]], "cwd": str(work / "state"), "env": {"TZ": "UTC"}, "supervisor": None}
    assert sorted(p.name for p in work.iterdir()) == [CLOSE_NOTE, "owner"]   # no part file left
    ran: list[CloseNote] = []
    assert slots.close_left(None, lambda note: ran.append(note) or "ran") == [f"{work}: ran"]
    assert ran == [CloseNote([["drop", "23840"]], str(work / "state"), {"TZ": "UTC"})]
    assert slots.close_left(None, lambda note: "again") == []   # once


def test_no_close_note_for_a_program_without_close_commands(root):
    work = folder(root, "clinigym-orthanc-0", os.getpid())
    slots.note_close(SimpleNamespace(app=SimpleNamespace(close=[]), workdir=work), {})
    assert not (work / CLOSE_NOTE).exists()


def test_close_commands_run_here_with_the_note_environment(tmp_path):
    out = tmp_path / "out"
    note = CloseNote([["sh", "-c", f'echo "$GIVEN ${{{slots.OWNER_ENV}:-none}} $PWD" > {out}'], ["false"]],
                     str(tmp_path), {"GIVEN": "yes"})
    said = guardian.close_commands(note)
    assert out.read_text().split() == ["yes", "none", str(tmp_path)]   # no owner mark: no sweep kills them
    assert said.startswith("close commands failed: ['false'] exited with 1")


def test_close_commands_of_a_gone_container_run_here(tmp_path):
    note = CloseNote([["touch", str(tmp_path / "done")]], str(tmp_path / "gone"), {}, str(tmp_path / "no.sock"))
    assert guardian.close_commands(note) == "ran 1 close command(s)"
    assert (tmp_path / "done").exists()


def test_waiting_for_an_owner_that_is_not_the_parent_returns_at_once():
    t = time.monotonic()
    guardian.wait_for_end(1)
    assert time.monotonic() - t < 0.1


def test_a_guardian_sweeps_its_owner_folders_when_the_owner_ends(tmp_path):
    """A real guardian of a real owner: the owner claims a folder and exits with an exception."""
    code = ("from clinigym.runtime import slots; "
            "s = slots.owned_folder('clinigym-collect-x-'); print(s, flush=True); raise SystemExit(3)")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env)
    made = Path(done.stdout.strip())
    assert done.returncode == 3 and made.parent == tmp_path
    deadline = time.monotonic() + 30
    while made.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not made.exists()
