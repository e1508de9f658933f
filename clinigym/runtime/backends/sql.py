"""Reading a program's database: one kept connection, read-only, the rows as text.

The safety audit reads a program's record sets after every action; a `psql` process per read
cost about 50 ms, a kept connection well under 1 ms. Programs run on the loopback (both
backends share the host's network), so their database answers this process directly. Values
are PostgreSQL's own text forms, as `psql` prints them (`t`/`f`, `2024-03-20`, `5.00`);
NULL reads as the empty string.
"""
from __future__ import annotations

import psycopg

CONNECT_TIMEOUT = 10   # seconds; a database that does not answer is a program fault


class SqlReader:
    """A read-only connection to one database URL, opened on first use and reopened when the
    program's reset replaced the database (its connections are ended then)."""

    def __init__(self) -> None:
        self._url: str | None = None
        self._conn: psycopg.Connection | None = None

    def rows(self, url: str, queries: list[str]) -> list[list[list[str]]]:
        """The rows of each query, in order. A connection lost since the last read (the
        database was replaced or the server restarted) is opened again once."""
        try:
            return self._read(url, queries)
        except psycopg.OperationalError:
            self.close()
            return self._read(url, queries)

    def _read(self, url: str, queries: list[str]) -> list[list[list[str]]]:
        conn = self._connect(url)
        answers = []
        with conn.cursor() as cur:
            for query in queries:
                cur.execute(query.encode())   # bytes: no placeholders are looked for
                res = cur.pgresult
                answers.append([[(res.get_value(r, c) or b"").decode() for c in range(res.nfields)]
                                for r in range(res.ntuples)] if res is not None else [])
        return answers

    def _connect(self, url: str) -> psycopg.Connection:
        if self._conn is None or self._conn.closed or url != self._url:
            self.close()
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT,
                                         options="-c default_transaction_read_only=on")
            self._url = url
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
