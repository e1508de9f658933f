"""`clinigym collect`: demonstrate a task on a live program through a local web page.

The page shows the program's live screen and forwards the person's mouse and
keyboard through the display's XTest input. Every action is recorded with its
pre-action screenshot and a proposed target box (DOM box through DevTools for
Chromium-hosted programs; otherwise the element's own feedback on hover or
press, the region that changed, or the OCR text box under the point), which the
person accepts or adjusts and describes with an instruction. At the end a
scenario file is written, replayed at once with the oracle and appended to a
MedSPOT-format dataset and its parquet export.

Modules: `actions` (the page's actions, checked), `boxes` (box arithmetic),
`proposals` (target boxes), `quality` (flags before saving), `writer` (scenario
YAML, transitions, dataset), `session` (the live program and the demonstration),
`stream` (the live screen for the page), `review` (correcting recorded episodes),
`agreement` (two annotators' boxes), `server` (the HTTP server and its API),
`errors`. The command line is `clinigym.cli.collect`.
"""
