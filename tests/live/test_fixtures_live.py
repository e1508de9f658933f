"""The synthetic studies: deterministic files with the headers and pixels of their modality,
readable by dcmtk and accepted by a real Orthanc (live)."""
from __future__ import annotations

import subprocess

import pydicom
import pytest

from clinigym.spec.apps import load_app


def read(modality_files, key: str, index: int = 0) -> pydicom.Dataset:
    return pydicom.dcmread(modality_files[key][index])


def test_dcmdump_reads_every_file(modality_files):
    for path in (p for paths in modality_files.values() for p in paths):
        run = subprocess.run(["dcmdump", "-E", str(path)], capture_output=True, text=True)
        assert run.returncode == 0 and "E:" not in run.stderr and "W:" not in run.stderr, (path, run.stderr)
        assert "(0010,0010) PN [PHANTOM^" in run.stdout


@pytest.mark.live
def test_orthanc_accepts_every_modality(modality_files):
    from clinigym.runtime.backends import make_backend
    backend = make_backend(load_app("orthanc"))
    try:
        backend.reset()
        base = f"http://127.0.0.1:{backend.ports['http']}"
        for key, paths in modality_files.items():
            for path in paths:
                resp = backend._http.post(f"{base}/instances", data=path.read_bytes(), timeout=30)
                assert resp.status_code == 200, (path, resp.text)
                assert resp.json()["Status"] == "Success", (path, resp.json())
            series = backend._http.get(f"{base}/series/{resp.json()['ParentSeries']}", timeout=30).json()
            assert len(series["Instances"]) == len(paths)
            assert series["MainDicomTags"]["Modality"] == read(modality_files, key).Modality
    finally:
        backend.close()
