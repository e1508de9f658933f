"""Prepare step of Ginkgo CADx (runs in the container, on its python3): link the fixture
studies into Ginkgo's history (its SQLite DICOM database under ~/.ginkgocadx) the way a
user does, by starting the program once with the fixture folder as its argument.

Ginkgo has no batch import: it links the folder's files into the history and opens each
study in a tab. This script waits until every fixture file is in the database and the
home folder is quiet and ends the program. Then it numbers the rows by patient and
instance (Ginkgo links in directory-listing order, which depends on the file system),
pins the times the history shows ("Date added" is the row's creation time), drops the
cached thumbnails (keyed by row) and removes the single-instance lock file.

Usage: python3 seed_history.py FIXTURES_DIR
"""
import os
import signal
import sqlite3
import subprocess
import sys
import time

STAMP = "2024-03-18 10:15:00"   # every history row's creation/update time
TIMEOUT = 120.0
QUIET = 2.0                      # seconds without a write under ~/.ginkgocadx


def count_files(db):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=1)
        try:
            return con.execute("SELECT count(*) FROM File").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:   # not created yet, or being written
        return -1


def last_write(folder):
    latest = 0.0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                latest = max(latest, os.stat(os.path.join(root, name)).st_mtime)
            except OSError:
                pass
    return latest


def renumber(con, table, order):
    """Primary keys 1..n in the given order (ON UPDATE CASCADE carries them along)."""
    old = [row[0] for row in con.execute("SELECT pk FROM %s ORDER BY %s" % (table, order))]
    shift = max(old, default=0) + 1
    con.execute("UPDATE %s SET pk = pk + ?" % table, (shift,))
    for new, pk in enumerate(old, 1):
        con.execute("UPDATE %s SET pk = ? WHERE pk = ?" % table, (new, pk + shift))


def main():
    fixtures = sys.argv[1]
    home = os.environ["HOME"]
    data = os.path.join(home, ".ginkgocadx")
    db = os.path.join(data, "DICOMDIR", "ginkgodatabase_2.1.db")
    expected = sum(n.endswith(".dcm") for _, _, names in os.walk(fixtures) for n in names)
    proc = subprocess.Popen(["ginkgocadx", fixtures], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + TIMEOUT
    try:
        while count_files(db) < expected:
            if proc.poll() is not None:
                sys.exit("ginkgocadx exited with %s before linking the fixtures" % proc.returncode)
            if time.monotonic() > deadline:
                sys.exit("ginkgocadx linked %d of %d fixture files in %.0f s"
                         % (count_files(db), expected, TIMEOUT))
            time.sleep(0.2)
        # Thumbnails and tabs follow the import: wait until nothing is written any more.
        seen, since = last_write(data), time.monotonic()
        while time.monotonic() - since < QUIET and time.monotonic() < deadline:
            time.sleep(0.2)
            now = last_write(data)
            if now != seen:
                seen, since = now, time.monotonic()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    con = sqlite3.connect(db)
    con.execute("PRAGMA foreign_keys = ON")   # renumbered keys cascade to the referring rows
    with con:
        # Ginkgo links files in directory-listing order, which differs between file
        # systems: number the rows by patient and instance instead.
        renumber(con, "Study", "pat_name, study_iuid")
        renumber(con, "Series", "study_fk, series_iuid")
        renumber(con, "File", "series_fk, instance_number, file_sopiuid")
        for table in ("Study", "Series", "File"):
            con.execute("UPDATE %s SET created_time = ?, updated_time = ?" % table, (STAMP, STAMP))
    con.close()
    thumbs = sqlite3.connect(os.path.join(data, "DICOMDIR", "ginkgothumbnails.db"))
    with thumbs:   # keyed by file row; made again when first shown
        thumbs.execute("DELETE FROM Thumbnails")
    thumbs.close()
    for leftover in ("Ginkgo-root", os.path.join(".ginkgocadx", "GinkgoLog.log")):
        try:
            os.remove(os.path.join(home, leftover))
        except FileNotFoundError:
            pass
    print("linked %d files" % expected)


if __name__ == "__main__":
    main()
