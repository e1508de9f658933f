"""Episode recordings as they travel from a Ray actor to the driver (real files, real tar
archives; no cluster)."""
from __future__ import annotations

import io
import json
import tarfile

import pytest

from clinigym.run.distributed import RayError, pack_episode, unpack_episode


def episode(root, name="0007-dicomscope-flip"):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "episode.json").write_text(json.dumps({"scenario": "dicomscope/flip", "extra": {"x": 1}}))
    (folder / "steps.jsonl").write_text('{"step": 0}\n')
    (folder / "step-000-before.png").write_bytes(b"\x89PNG")
    return folder


def test_round_trip_adds_where_it_ran(tmp_path):
    episode(tmp_path / "actor")
    episode(tmp_path / "actor", "0008-dicomscope-rotate")
    archive = pack_episode(tmp_path / "actor", 7)
    assert [p.name for p in (tmp_path / "actor").iterdir()] == ["0008-dicomscope-rotate"]   # sent: removed
    ray = {"node": "abc", "retries": [{"node": "def", "host": "h", "error": "ActorDiedError: x"}]}
    unpack_episode(archive, tmp_path / "run", 7, ray)
    folder = tmp_path / "run" / "0007-dicomscope-flip"
    assert sorted(p.name for p in folder.iterdir()) == ["episode.json", "step-000-before.png", "steps.jsonl"]
    assert json.loads((folder / "episode.json").read_text())["extra"] == {"x": 1, "ray": ray}
    assert (folder / "steps.jsonl").read_text() == '{"step": 0}\n'


def test_an_episode_that_recorded_nothing(tmp_path):
    (tmp_path / "actor").mkdir()
    unpack_episode(pack_episode(tmp_path / "actor", 3), tmp_path / "run", 3, {})
    unpack_episode(b"", tmp_path / "run", 3, {})
    assert not (tmp_path / "run").exists() or not list((tmp_path / "run").iterdir())


def tar_of(*names: str) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"{}"))
    return data.getvalue()


@pytest.mark.parametrize("names", [("0007-a/../../escape",), ("/tmp/0007-a",), ("0007-a/x", "0008-b/x"),
                                   ("0009-c/episode.json",)])
def test_an_archive_with_anything_else_is_refused(tmp_path, names):
    with pytest.raises(RayError, match="episode 7: its archive holds"):
        unpack_episode(tar_of(*names), tmp_path / "run", 7, {})
    assert not (tmp_path / "run").exists()
    assert not (tmp_path.parent / "escape").exists()
