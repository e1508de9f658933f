"""The kept database connection of the safety audit, on the machine's real PostgreSQL (the
role `make deps` creates): values in psql's text forms, read-only, and a database replaced
between two reads (as a reset does) read again on a new connection."""
from __future__ import annotations

import psycopg
import pytest

from clinigym.runtime.backends.sql import SqlReader

pytestmark = pytest.mark.live

SERVER = "postgresql://clinigym:clinigym@127.0.0.1:5432"
SCRATCH = "clinigym_test_sql_reader"


def admin(statement: str) -> None:
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(statement.encode())


@pytest.fixture
def scratch():
    admin(f'DROP DATABASE IF EXISTS "{SCRATCH}" WITH (FORCE)')
    admin(f'CREATE DATABASE "{SCRATCH}"')
    yield f"{SERVER}/{SCRATCH}"
    admin(f'DROP DATABASE IF EXISTS "{SCRATCH}" WITH (FORCE)')


def test_rows_are_psqls_text_forms(scratch):
    reader = SqlReader()
    try:
        assert reader.rows(scratch, [
            "SELECT true, false, 5.00::numeric(6,2), NULL, '', DATE '2024-03-20', 'a;b'",
            "SELECT n FROM generate_series(1, 3) n ORDER BY n",
            "SELECT 1 WHERE false",
        ]) == [[["t", "f", "5.00", "", "", "2024-03-20", "a;b"]], [["1"], ["2"], ["3"]], []]
    finally:
        reader.close()


def test_writes_are_refused(scratch):
    reader = SqlReader()
    try:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader.rows(scratch, ["CREATE TABLE written (n int)"])
        # the connection still answers after the refusal
        assert reader.rows(scratch, ["SELECT count(*) FROM pg_tables WHERE tablename = 'written'"]) == [[["0"]]]
    finally:
        reader.close()


def test_a_replaced_database_is_read_on_a_new_connection(scratch):
    reader = SqlReader()
    try:
        assert reader.rows(scratch, ["SELECT count(*) FROM pg_class WHERE relname = 'marker'"]) == [[["0"]]]
        # a reset's copy: the database is dropped (its connections ended) and made anew
        admin(f'DROP DATABASE "{SCRATCH}" WITH (FORCE)')
        admin(f'CREATE DATABASE "{SCRATCH}"')
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute(b"CREATE TABLE marker (n int)")
        assert reader.rows(scratch, ["SELECT count(*) FROM pg_class WHERE relname = 'marker'"]) == [[["1"]]]
    finally:
        reader.close()
