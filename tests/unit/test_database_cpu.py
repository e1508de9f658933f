"""Which of PostgreSQL's process titles serve a database (the live test, in
tests/live/test_gnuhealth.py, counts a real query's CPU)."""
from clinigym.runtime.database_cpu import DatabaseCpu


def test_titles_of_the_databases_server_processes():
    title = DatabaseCpu("gnuhealth_23840").title
    serving = ["postgres: 15/main: clinigym gnuhealth_23840 127.0.0.1(41234) idle",
               "postgres: 15/main: clinigym gnuhealth_23840 [local] SELECT",
               "postgres: clinigym gnuhealth_23840 127.0.0.1(41234) idle in transaction"]
    others = ["postgres: 15/main: clinigym gnuhealth_238400 127.0.0.1(41234) idle",
              "postgres: 15/main: clinigym gnuhealth_23841 127.0.0.1(41234) idle",
              "postgres: 15/main: autovacuum worker gnuhealth_23840",
              "postgres: 15/main: checkpointer ",
              "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main",
              "python3 -c postgres: 15/main: clinigym gnuhealth_23840 x"]
    assert [bool(title.match(t)) for t in serving] == [True, True, True]
    assert [bool(title.match(t)) for t in others] == [False] * 6
