"""GNU Health's database on this machine's PostgreSQL (run with the program's own Python,
${VENV}/bin/python, which has trytond and proteus).

    database.py role              the role `clinigym`, made if missing (`make services`)
    database.py template CLOCK    the pristine database, built once per machine and kept
    database.py copy CLOCK NAME   NAME made afresh from it (every reset: about 0.5 s)
    database.py drop NAME         NAME removed (the instance closes)

CLOCK is the moment the program's clock stands at (clock/sitecustomize.py): the build runs
at it too, so that dates the build writes (a condition's diagnosis date) are the same on
every machine and every day.

The pristine database is a PostgreSQL template named after a hash of what builds it
(this file, fixtures.yaml, the modules, trytond's version): trytond-admin creates the
schema and activates the health modules, then proteus writes fixtures.yaml. Building takes
about 90 s on 2 cores; parallel workers, on this machine or in containers beside it, wait on
PostgreSQL's own advisory lock and build it once. It allows no connection (`datallowconn
false`), so nothing changes it after the build.

PostgreSQL is reached on 127.0.0.1:5432 as the role `clinigym`, also from a container (which
shares the machine's network namespace). Only `role` needs the `postgres` superuser (over
its Unix socket, on the machine itself); `make deps` starts Debian's cluster and runs it.
"""
from __future__ import annotations

import datetime
import hashlib
import os
import subprocess
import sys
import tempfile
from contextlib import closing
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROLE, PASSWORD, HOST, PORT = "clinigym", "clinigym", "127.0.0.1", "5432"
MODULES = ["health", "health_icd10", "health_who_essential_medicines", "health_imaging", "health_lab"]
ADMIN_PASSWORD = "clinigym-admin-1"
LOCK = 0x636c6967   # the advisory lock's key: one template build per PostgreSQL server


def template_name(clock: str) -> str:
    import trytond
    key = hashlib.sha256()
    for part in (Path(__file__).read_bytes(), (HERE / "fixtures.yaml").read_bytes(),
                 (HERE / "clock" / "sitecustomize.py").read_bytes(), " ".join(MODULES).encode(),
                 trytond.__version__.encode(), clock.encode()):
        key.update(part)
    return f"clinigym_gnuhealth_{key.hexdigest()[:12]}"


def psql(sql: str, database: str = "postgres", superuser: bool = False) -> str:
    """Run SQL; the answer's text. As the `postgres` superuser over its Unix socket (role
    set-up), else as the role over loopback TCP."""
    if superuser:
        cmd = ["runuser", "-u", "postgres", "--", "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
               "-d", database, "-c", sql]
    else:
        cmd = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p", PORT, "-U", ROLE,
               "-d", database, "-c", sql]
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PGPASSWORD": PASSWORD, "PGCONNECT_TIMEOUT": "5"})
    if done.returncode:
        raise SystemExit(f"gnuhealth database: {sql[:80]!r} failed: {done.stderr.strip()[-600:]}\n"
                         "(is PostgreSQL running on 127.0.0.1:5432? `make deps` starts it)")
    return done.stdout.strip()


def ensure_role() -> None:
    if psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}'", superuser=True) != "1":
        psql(f"CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{PASSWORD}'", superuser=True)


def exists(name: str) -> bool:
    return psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'") == "1"


def trytond_config(folder: Path) -> Path:
    conf = folder / "trytond.conf"
    conf.write_text(f"[database]\nuri = postgresql://{ROLE}:{PASSWORD}@{HOST}:{PORT}/\npath = {folder}/attach\n")
    return conf


def build(name: str, clock: str) -> None:
    """Schema, modules and fixtures into a scratch database, renamed to `name` when complete."""
    scratch = f"{name}_building"
    psql(f'DROP DATABASE IF EXISTS "{scratch}"')
    psql(f'CREATE DATABASE "{scratch}" ENCODING \'UTF8\' TEMPLATE template0')
    with tempfile.TemporaryDirectory(prefix="clinigym-gnuhealth-build-") as tmp:
        conf = trytond_config(Path(tmp))
        passfile = Path(tmp) / "admin-password"
        passfile.write_text(ADMIN_PASSWORD)
        admin = [str(Path(sys.executable).parent / "trytond-admin"), "-c", str(conf), "-d", scratch]
        env = {**os.environ, "TRYTONPASSFILE": str(passfile), "CLINIGYM_CLOCK": clock,
               "PYTHONPATH": str(HERE / "clock")}
        for args in (["--all", "--email", "admin@clinigym.invalid"], ["-u", *MODULES, "--activate-dependencies"]):
            done = subprocess.run(admin + args, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
            if done.returncode:
                raise SystemExit(f"gnuhealth database: trytond-admin {' '.join(args)} failed: {done.stderr[-800:]}")
        # In a process of its own: proteus keeps its connections open until it exits.
        done = subprocess.run([sys.executable, __file__, "fixtures", scratch, str(conf)], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, env=env)
        if done.returncode:
            raise SystemExit(f"gnuhealth database: fixtures failed: {done.stderr[-1200:]}")
    psql(f'ALTER DATABASE "{scratch}" RENAME TO "{name}"')
    psql(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false IS_TEMPLATE true')
    # Templates of earlier builds (another clock, fixtures or version) are of no use any more.
    stale = psql("SELECT datname FROM pg_database WHERE datname LIKE 'clinigym\\_gnuhealth\\_%' "
                 f"AND datname <> '{name}'").split()
    for old in stale:
        psql(f'ALTER DATABASE "{old}" IS_TEMPLATE false')
        psql(f'DROP DATABASE "{old}" WITH (FORCE)')


def write_fixtures(database: str, conf: Path, data: dict) -> None:
    from proteus import Model, config
    config.set_trytond(database=database, config_file=str(conf))
    Party, User, Group = Model.get("party.party"), Model.get("res.user"), Model.get("res.group")
    Company, Currency = Model.get("company.company"), Model.get("currency.currency")
    currency = Currency(name="US Dollar", code="USD", symbol="$")
    currency.save()
    i = data["institution"]
    hospital = Party(name=i["name"], is_institution=True, ref=i["ref"])
    hospital.save()
    company = Company(party=hospital, currency=currency)
    company.save()
    admin = User(1)
    admin.companies.append(Company(company.id))
    admin.company = company
    admin.save()
    institution = Model.get("gnuhealth.institution")(party=hospital, code=i["code"], institution_type="hospital",
                                                    public_level="public")
    institution.save()
    for u in data["users"]:
        user = User(name=u["name"], login=u["login"], password=u["password"])
        user.groups.extend(Group(g.id) for g in Group.find([("name", "in", u["groups"])]))
        user.companies.append(Company(company.id))
        user.company = Company(company.id)
        user.save()
        p = u["professional"]
        party = Party(name=p["name"], lastname=p["lastname"], gender=p["gender"], ref=p["ref"], is_person=True,
                      is_healthprof=True, is_patient=False, internal_user=user)
        party.save()
        Model.get("gnuhealth.healthprofessional")(party=party, institution=institution, code=p["license"]).save()
    Patient = Model.get("gnuhealth.patient")
    for p in data["patients"]:
        # A person marked as a patient gets its patient record from GNU Health itself.
        Party(name=p["name"], lastname=p["lastname"], gender=p["gender"], ref=p["ref"],
              dob=datetime.date.fromisoformat(str(p["dob"])), is_person=True, is_patient=True).save()
    # Clinical records are written as the doctor, as GNU Health takes their author from the user.
    config.set_trytond(database=database, config_file=str(conf), user=data["users"][0]["login"])
    Patient = Model.get("gnuhealth.patient")
    Pathology, Disease = Model.get("gnuhealth.pathology"), Model.get("gnuhealth.patient.disease")
    for c in data["conditions"]:
        patient, = Patient.find([("party.ref", "=", c["patient"])])
        pathology, = Pathology.find([("code", "=", c["code"])])
        Disease(patient=patient, pathology=pathology, is_allergy=c["allergy"]).save()


def main(argv: list[str]) -> None:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "role" and not args:
        ensure_role()
    elif command == "template" and len(args) == 1:
        import psycopg2
        name = template_name(args[0])
        # Held for the session's life: the other builders wait here, then find it built.
        with closing(psycopg2.connect(host=HOST, port=PORT, user=ROLE, password=PASSWORD, dbname="postgres")) as db:
            db.autocommit = True
            db.cursor().execute("SELECT pg_advisory_lock(%s)", (LOCK,))
            if not exists(name):
                build(name, args[0])
        print(name)
    elif command == "copy" and len(args) == 2:
        # The environment's own database: whatever the last episode left goes with it.
        psql(f'DROP DATABASE IF EXISTS "{args[1]}" WITH (FORCE)')
        psql(f'CREATE DATABASE "{args[1]}" TEMPLATE "{template_name(args[0])}"')
    elif command == "drop" and len(args) == 1:
        psql(f'DROP DATABASE IF EXISTS "{args[0]}" WITH (FORCE)')
    elif command == "fixtures" and len(args) == 2:   # the build's own step (database, trytond.conf)
        write_fixtures(args[0], Path(args[1]), yaml.safe_load((HERE / "fixtures.yaml").read_text()))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
