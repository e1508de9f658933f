"""A program's records, as its program file declares them (`records:`), read for the safety
audit of plan and goal episodes (`clinigym.core.audit`).

Each record set names one source kind, a row of `SOURCES` with its own reader: `http` (a
loopback URL answering a JSON list of objects, as Orthanc's `/studies?expand`), `files`
(files of the state folder matching a glob: a DICOM file's patient is read from its
header; its fields are its name, its stem before the first dot, its size and SHA-1) or
`sql` (a query on the program's database: each row a record, its key, its patient, then
the values its `fields` name, in that order). A
snapshot maps every key of every set to an `Item` (its patient and fields); the audit
compares the snapshot after the episode with the one at its start.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from clinigym.core.audit import Item, Snapshot
from clinigym.core.errors import ProgramError
from clinigym.spec.conditions import Probe
from clinigym.spec.files import Spec


class RecordSet(Spec):
    """One set of a program's records: where they are read and what identifies them."""
    http: str | None = Field(None, description="loopback URL answering a JSON list of objects")
    files: str | None = Field(None, description="glob (** allowed) relative to the program's state folder")
    sql: str | None = Field(None, description="query on the program's database: columns key, patient, then "
                                              "one per name in `fields`")
    key: str | None = Field(None, description="http: the dotted path of each object's identifier")
    patient: str | None = Field(None, description="http: the dotted path of the object's patient name")
    fields: list[str] = Field([], description="http: dotted paths compared to tell a modified record")
    fetch: dict[str, str] = Field({}, description="http: fields read per record from a loopback URL in which "
                                                  "{key} is the record's key (a state the list leaves out)")

    @model_validator(mode="after")
    def _one_source(self):
        given = [k for k in SOURCES if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(SOURCES)}")
        if given[0] == "http" and not self.key:
            raise ValueError("an http record set needs `key`")
        if given[0] == "files" and (self.key or self.patient or self.fields or self.fetch):
            raise ValueError("a files record set takes no key, patient, fields or fetch (they come from the file)")
        if given[0] == "sql" and (self.key or self.patient or self.fetch):
            raise ValueError("an sql record set takes no key, patient or fetch: its first two columns are "
                             "the key and the patient")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in SOURCES if getattr(self, k) is not None)


def _dotted(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _read_http(rs: RecordSet, probe: Probe) -> dict[str, Item]:
    resp = probe.http_get(rs.http)
    if resp.status_code != 200:
        raise ProgramError(f"records {rs.http}: HTTP {resp.status_code}")
    rows = resp.json()
    if not isinstance(rows, list):
        raise ProgramError(f"records {rs.http}: expected a JSON list")
    out = {}
    for row in rows:
        key = str(_dotted(row, rs.key))
        patient = _dotted(row, rs.patient) if rs.patient else None
        fields = {f: str(_dotted(row, f)) for f in rs.fields}
        fields |= {name: probe.http_get(url.replace("{key}", key)).text.strip() for name, url in rs.fetch.items()}
        out[key] = Item(None if patient is None else str(patient), fields)
    return out


def _dicom_patient(path: Path) -> str | None:
    import pydicom
    try:
        ds = pydicom.dcmread(path, stop_before_pixels=True, specific_tags=["PatientName"])
    except (pydicom.errors.InvalidDicomError, OSError, ValueError):
        return None   # not a DICOM file: no patient to tell
    name = str(ds.get("PatientName") or "").strip()
    return name or None   # a blank name (a screen capture) belongs to no patient


def _read_files(rs: RecordSet, probe: Probe) -> dict[str, Item]:
    out = {}
    for name in probe.state_glob(rs.files):
        path = Path(name)
        if not path.is_file():
            continue
        data = path.read_bytes()
        # name and stem: the file name a task may prescribe (`values:`), a data-accuracy check
        out[name] = Item(_dicom_patient(path), {"name": path.name, "stem": path.name.split(".", 1)[0],
                                                "size": str(len(data)), "sha1": hashlib.sha1(data).hexdigest()})
    return out


def _read_sql(rs: RecordSet, probe: Probe) -> dict[str, Item]:
    out = {}
    for row in probe.sql(rs.sql or ""):
        if len(row) != 2 + len(rs.fields):
            raise ProgramError(f"records {rs.sql[:60] if rs.sql else ''!r}: {len(row)} columns, expected "
                               f"key, patient and {len(rs.fields)} field(s)")
        key, patient, *values = row
        out[key] = Item(patient or None, dict(zip(rs.fields, values, strict=True)))
    return out


@dataclass(frozen=True)
class Source:
    name: str
    doc: str
    read: Callable[[RecordSet, Probe], dict[str, Item]]


SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("http", "a loopback URL answering a JSON list of objects", _read_http),
    Source("files", "files of the state folder matching a glob", _read_files),
    Source("sql", "rows of a query on the program's database", _read_sql),
)}


READ_ATTEMPTS = 3   # a server may drop a kept-alive connection under load; the next read answers


class _Prefetched:
    """A probe whose `sql` answers the queries read ahead in one batch (`sql_many`: one
    database client for all of a program's record sets), the rest of it as is."""

    def __init__(self, probe: Probe, answers: dict[str, list[list[str]]]):
        self._probe, self._answers = probe, answers

    def __getattr__(self, name: str) -> Any:
        return getattr(self._probe, name)

    def sql(self, query: str) -> list[list[str]]:
        return self._answers[query]


def snapshot(sets: dict[str, RecordSet], probe: Probe) -> Snapshot:
    """Every record set of a program, read now; a dropped connection is tried again, up to
    `READ_ATTEMPTS` reads in all (CI once lost a goal episode to one dropped REST answer)."""
    queries = list(dict.fromkeys(rs.sql for rs in sets.values() if rs.sql is not None))

    def read() -> Snapshot:
        many = getattr(probe, "sql_many", None)
        source = _Prefetched(probe, dict(zip(queries, many(queries), strict=True))) if many and queries else probe
        return {name: SOURCES[rs.kind].read(rs, source) for name, rs in sets.items()}
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return read()
        except OSError:
            pass
    return read()
