"""Program-file fields for programs beyond a plain X11 binary (GNU Health): Python packages
in a virtualenv of their own, restore commands, input at every start, a database that `sql`
conditions read, the backends a program runs on."""
from __future__ import annotations

from pathlib import Path

import pytest

from clinigym.runtime import pyenv
from clinigym.runtime.backends import default_kind, make_backend
from clinigym.spec.apps import _load
from clinigym.spec.conditions import Condition, holds
from clinigym.spec.files import SpecError

BASE = "name: lab\ntitle: Lab\nprocesses:\n  - {name: lab, command: [xmessage, hi]}\n"


def app_file(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "lab"
    folder.mkdir(exist_ok=True)
    path = folder / "app.yaml"
    path.write_text(BASE + extra)
    return path


@pytest.mark.parametrize("extra, field, problem", [
    ("python: {packages: [trytond]}\n", "python.packages", "pin every package to one version (name==version): trytond"),
    ("python: {packages: ['trytond>=7']}\n", "python.packages", "pin every package"),
    ("python: {packages: []}\n", "python.packages", "at least 1 item"),
    ("database: postgresql://u:p@10.0.0.5:5432/db\n", "", "a postgresql:// URI on loopback"),
    ("database: mysql://u@127.0.0.1/db\n", "", "a postgresql:// URI on loopback"),
    ("restore: [[cp, '${VENV}/x', y]]\n", "", "unknown variable ${VENV}"),
    ("backends: []\n", "backends", "at least 1 item"),
    ("backends: [cloud]\n", "backends[0]", "'local' or 'docker'"),
    ("start: [{type: secret}]\n", "start[0].until", "Field required"),
    ("restore_before: server\n", "", "restore_before names no process: 'server'"),
    ("settle: {quiet: 1.5, first_idle_quiet: 0.3}\n", "settle", "needs an idle_quiet at least as long"),
    ("settle: {quiet: 1.5, idle_quiet: 0.3, first_idle_quiet: 0.5}\n", "settle", "needs an idle_quiet"),
    ("settle: {page_busy: 'window.busy()'}\n", "", "settle.page_busy needs a dom_port"),
    ("settle: {page_busy: ''}\n", "settle.page_busy", "at least 1 character"),
])
def test_malformed_program_fields_name_field_and_problem(tmp_path, extra, field, problem):
    with pytest.raises(SpecError) as err:
        _load(app_file(tmp_path, extra))
    assert err.value.field == field and problem in err.value.problem


def test_program_fields_load(tmp_path):
    app = _load(app_file(tmp_path, (
        "python: {packages: ['gnuhealth==5.0.6', 'time-machine==2.16.0'], system_site_packages: true}\n"
        "restore: [['${VENV}/bin/python', restore.py]]\n"
        "close: [['${VENV}/bin/python', drop.py]]\n"
        "start: [{type: \"pw\\n\", until: {sql: {query: 'SELECT 1', equals: '1'}}}]\n"
        "database: postgresql://clinigym:clinigym@127.0.0.1:5432/lab\n"
        "backends: [local]\n"
        "restore_before: lab\n"
        "settle: {quiet: 1.5, idle_quiet: 0.7, first_idle_quiet: 0.3}\n")))
    assert app.python.packages == ["gnuhealth==5.0.6", "time-machine==2.16.0"] and app.python.system_site_packages
    assert app.restore == [["${VENV}/bin/python", "restore.py"]]
    assert app.close == [["${VENV}/bin/python", "drop.py"]]
    assert app.start[0].type == "pw\n" and app.start[0].until[0].kind == "sql"
    assert app.backends == ["local"] and default_kind(app) == "local"
    assert app.restore_before == "lab" and app.settle.first_idle_quiet == 0.3
    assert app.processes[0].concurrent is False
    path = app_file(tmp_path, "")
    pacs = "  - {name: pacs, command: [Orthanc], concurrent: true}\n"
    path.write_text(BASE.replace("processes:\n", "processes:\n" + pacs))
    server = _load(path)
    assert [p.concurrent for p in server.processes] == [True, False]
    # A unix-socket URI (no host) is loopback too.
    assert _load(app_file(tmp_path, "database: postgresql:///lab?host=/run/postgresql\n")).database


def test_a_program_refuses_a_backend_it_does_not_run_on(tmp_path, monkeypatch):
    app = _load(app_file(tmp_path, "backends: [local]\n"))
    with pytest.raises(SpecError, match="lab runs on local only, not docker"):
        make_backend(app, "docker")
    monkeypatch.setenv("CLINIGYM_BACKEND", "docker")   # a run-wide choice it cannot follow
    assert default_kind(app) == "local"


def test_virtualenv_folder_follows_the_pins(tmp_path):
    one = _load(app_file(tmp_path, "python: {packages: ['a==1']}\n"))
    same = _load(app_file(tmp_path, "python: {packages: ['a==1']}\n"))
    other = _load(app_file(tmp_path, "python: {packages: ['a==2']}\n"))
    root = tmp_path / "venvs"
    assert pyenv.venv_dir(one, root) == pyenv.venv_dir(same, root) != pyenv.venv_dir(other, root)
    assert pyenv.venv_dir(one, root).parent == root and pyenv.venv_dir(one, root).name.startswith("lab-")
    assert not pyenv.is_made(one, root)
    assert pyenv.variables(_load(app_file(tmp_path, ""))) == {}   # no Python packages: no ${VENV}


class Rows:
    """What a database answered (the check's logic alone; live tests read a real PostgreSQL)."""

    def __init__(self, rows):
        self.rows, self.queries = rows, []

    def sql(self, query):
        self.queries.append(query)
        return self.rows


@pytest.mark.parametrize("cond, rows, expected", [
    ({"query": "SELECT count(*) FROM t", "equals": "1"}, [["1"]], True),
    ({"query": "SELECT count(*) FROM t", "equals": "1"}, [["2"]], False),
    ({"query": "SELECT x FROM t", "equals": "t"}, [["t"], ["t"]], False),     # one value, not two rows
    ({"query": "SELECT x, y FROM t", "equals": "t"}, [["t", "u"]], False),    # one value, not two columns
    ({"query": "SELECT x FROM t", "equals": "t"}, [], False),
    ({"query": "SELECT x FROM t", "rows": 0}, [], True),
    ({"query": "SELECT x FROM t", "rows": 2}, [["a"], ["b"]], True),
    ({"query": "SELECT x FROM t", "rows": 2}, [["a"]], False),
])
def test_sql_condition(cond, rows, expected):
    probe = Rows(rows)
    assert holds(Condition(sql=cond), probe) is expected
    assert probe.queries == [cond["query"]]


@pytest.mark.parametrize("cond", [{"query": "SELECT 1"}, {"query": "SELECT 1", "equals": "1", "rows": 1},
                                  {"query": "", "equals": "1"}, {"query": "SELECT 1", "rows": -1}])
def test_malformed_sql_condition(cond):
    with pytest.raises(ValueError):
        Condition(sql=cond)
