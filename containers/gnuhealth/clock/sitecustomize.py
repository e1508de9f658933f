"""Imported by every Python process of the GNU Health program (its PYTHONPATH names this
folder): with CLINIGYM_CLOCK set, the wall clock reads that moment and stands still there
(time-machine; the monotonic clock, which timeouts use, is left alone). Patients' ages,
today's date in new records and the year in record codes then do not follow the day the
episode runs. libfaketime cannot do this for Python: under it a frozen clock makes
time.sleep fail with EINVAL.

The identifiers GNU Health makes up for a new person (a PUID left empty, the federation
account shown on the form) come from `secrets.choice`: with the clock stopped, that choice
repeats from process start too, so that a registration draws the same screen in every run.
Session keys and password salts use other calls and stay random."""
import os

if os.environ.get("CLINIGYM_CLOCK"):
    import random
    import secrets

    import time_machine

    time_machine.travel(os.environ["CLINIGYM_CLOCK"], tick=False).start()
    secrets.choice = random.Random(os.environ["CLINIGYM_CLOCK"]).choice
