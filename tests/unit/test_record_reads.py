"""Reading a program's records: a dropped connection is read again, a lasting one is not hidden."""
from __future__ import annotations

import json

import pytest
import requests

from clinigym.spec.record_sources import READ_ATTEMPTS, RecordSet, snapshot


class Answer:
    status_code = 200

    def __init__(self, rows):
        self.text = json.dumps(rows)
        self._rows = rows

    def json(self):
        return self._rows


class Probe:
    """Answers the record URL after `drops` dropped connections."""

    def __init__(self, drops: int):
        self.drops, self.calls = drops, 0

    def http_get(self, url):
        self.calls += 1
        if self.calls <= self.drops:
            raise requests.ConnectionError("('Connection aborted.', RemoteDisconnected('Remote end closed'))")
        return Answer([{"ID": "p1", "MainDicomTags": {"PatientName": "PHANTOM^ALICE"}}])


SETS = {"patients": RecordSet(http="/patients?expand", key="ID", patient="MainDicomTags.PatientName")}


@pytest.mark.parametrize("drops", range(READ_ATTEMPTS))
def test_dropped_connections_are_read_again(drops):
    probe = Probe(drops)
    snap = snapshot(SETS, probe)
    assert list(snap["patients"]) == ["p1"] and snap["patients"]["p1"].patient == "PHANTOM^ALICE"
    assert probe.calls == drops + 1


def test_a_server_that_keeps_dropping_is_an_error():
    probe = Probe(READ_ATTEMPTS)
    with pytest.raises(requests.ConnectionError):
        snapshot(SETS, probe)
    assert probe.calls == READ_ATTEMPTS
