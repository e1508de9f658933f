"""`clinigym report RUN_DIR... --out DIR`: compare recorded runs on one page.

Each RUN_DIR (a run folder with `episodes/`, or one episode folder) is one
column, labelled by the agent recorded in its episodes and the folder name,
and scored with `clinigym.eval.scoring.score_dirs`. The report folder gets:

    report.html   self-contained: inline CSS, charts as inline SVG, no script,
                  nothing fetched from the network
    report.json   the numbers: every run's summary exactly as score_dirs gives it,
                  plus the gallery's step records
    report.md     the same numbers as Markdown tables
    images/       the gallery: each recorded step's observation, downscaled, with
                  the target box and the predicted point drawn in the colour of
                  the step's outcome (green correct, red wrong, grey no prediction)
"""
from __future__ import annotations

from clinigym.eval.report.page import build_report
from clinigym.eval.report.runs import GALLERY_LIMIT, THUMB_WIDTH, ReportError, Run, load_run

__all__ = ["GALLERY_LIMIT", "THUMB_WIDTH", "ReportError", "Run", "build_report", "load_run"]
