"""A run's provenance (clinigym.run.provenance): the parsers with exact values, a program's
pins, and what a run folder's run.json holds (a RunSpec that still reads it back)."""
from __future__ import annotations

import hashlib

from clinigym.run import provenance
from clinigym.run.schedule import RunSpec
from clinigym.spec.apps import load_app

MEMINFO = "MemTotal:       24683784 kB\nMemFree:         1000000 kB\n"
OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
DPKG = "orthanc\t1.10.1+dfsg-2+deb12u1\nlibc6\t2.36-9+deb12u10\n"


def test_parsers():
    assert provenance.parse_meminfo(MEMINFO) == 24683784 * 1024
    assert provenance.parse_meminfo("MemFree: 1 kB\n") is None
    assert provenance.parse_os_release(OS_RELEASE) == "Debian GNU/Linux 12 (bookworm)"
    assert provenance.parse_os_release("NAME=x\n") is None
    assert provenance.parse_dpkg(DPKG, ["orthanc", "libc6:amd64", "chromium"]) == {
        "orthanc": "1.10.1+dfsg-2+deb12u1", "libc6:amd64": "2.36-9+deb12u10", "chromium": None}


def test_file_hash(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_bytes(b"id: x\n")
    assert provenance.sha256_file(f) == hashlib.sha256(b"id: x\n").hexdigest()


def test_pins_of_the_program_files():
    assert provenance.pins(load_app("ohif")) == {"npm": {"ohif": "@ohif/app@3.13.2"}}
    assert provenance.pins(load_app("gnuhealth"))["pypi"][:3] == ["gnuhealth==5.0.6", "gnuhealth-client==5.0.2",
                                                                  "trytond==7.0.59"]
    assert provenance.pins(load_app("orthanc")) == {}


def test_the_clinigym_of_this_checkout():
    info = provenance.clinigym_info()
    from clinigym import __version__
    assert info["version"] == __version__
    assert info["commit"] is None or len(info["commit"]) == 40


def test_run_json_with_provenance_reads_back_as_its_spec():
    spec = RunSpec(("/s/a.yaml",), "http", {"model": "m", "api_key_env": "LAB_KEY"}, 2, 7)
    data = spec.to_json() | {"provenance": {"format": 1}}
    assert RunSpec.from_json(data) == spec
