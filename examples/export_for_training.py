"""Record episodes and export them as training data.

The oracle (the scenario's reference path) runs one Orthanc Explorer scenario into a
temporary run folder; `clinigym export` writes the recorded steps as a MedSPOT-format
dataset (annotation JSON per program, keyframe PNGs) and as a Hugging Face `datasets`
parquet file (one row per step: the keyframe, the instruction, the target box, the
action); both are loaded back.

    .venv/bin/python examples/export_for_training.py

With your own runs: `clinigym export runs/mine --medspot datasets/mine --parquet mine.parquet`
(`--all` also exports episodes that did not complete).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from datasets import Dataset, disable_progress_bars

from clinigym.spec.medspot import read_dataset

CLINIGYM = [sys.executable, "-m", "clinigym.cli"]       # the `clinigym` command of this Python
SCENARIO = "orthanc/open-patient-study"


def clinigym(*args: str) -> None:
    print("$ clinigym " + " ".join(args), flush=True)
    quiet = {**os.environ, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    subprocess.run([*CLINIGYM, *args], check=True, stdout=subprocess.DEVNULL, env=quiet)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run, medspot, parquet = Path(tmp) / "run", Path(tmp) / "medspot", Path(tmp) / "steps.parquet"
        clinigym("run", "--agent", "oracle", "--scenario", SCENARIO, "--out", str(run), "--no-progress")
        clinigym("export", str(run), "--medspot", str(medspot), "--parquet", str(parquet))

        tasks = read_dataset(medspot)
        disable_progress_bars()
        rows = Dataset.from_parquet(str(parquet))
        first = rows[0]
        print(f"MedSPOT: {len(tasks)} task(s), {sum(len(t.steps) for t in tasks)} steps, keyframes "
              f"{len(list(medspot.rglob('*.png')))}")
        print(f"parquet: {rows.num_rows} rows, columns {', '.join(rows.column_names)}")
        box = [round(v) for v in first["target_box"]]
        print(f"row 0: {first['instruction']!r} -> {first['action_type']} at {first['point']} in box {box} "
              f"on a {first['image'].size[0]}x{first['image'].size[1]} keyframe")


if __name__ == "__main__":
    main()
