"""Evaluate a model behind an OpenAI-compatible API, as one would against vLLM.

A model server stands in for `vllm serve`: clinigym's loopback test server, which answers
like a UI-TARS-1.5 model (its prompt, its answer format, its coordinates) and grounds with
OCR, so no weights are needed. The script starts it, runs the `http` agent on one Orthanc
Explorer scenario with `clinigym run`, scores the run with `clinigym score`, and stops
the server.

    .venv/bin/python examples/vllm_style_eval.py

Against a real model, start the server yourself and give its address and model name:

    vllm serve ByteDance-Seed/UI-TARS-1.5-7B --port 8000
    clinigym run --agent http --model-family ui-tars-1.5 --base-url http://127.0.0.1:8000/v1 \
        --model ByteDance-Seed/UI-TARS-1.5-7B --scenario 'orthanc/*' --out runs/tars
    clinigym score runs/tars
"""
from __future__ import annotations

import json
import selectors
import subprocess
import sys
import tempfile
from pathlib import Path

CLINIGYM = [sys.executable, "-m", "clinigym.cli"]       # the `clinigym` command of this Python
FAMILY = "ui-tars-1.5"
SCENARIO = "orthanc/open-patient-study"


def server_url(server: subprocess.Popen, timeout: float = 60.0) -> str:
    """The URL the server prints once it listens ("serving FAMILY on URL")."""
    assert server.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(server.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise TimeoutError(f"the model server printed nothing in {timeout:.0f} s")
    line = server.stdout.readline()
    if not line.startswith("serving "):
        raise RuntimeError(f"the model server did not start: {line!r} (exit {server.poll()})")
    return line.split(" on ", 1)[1].strip()


def clinigym(*args: str) -> str:
    print("$ clinigym " + " ".join(args), flush=True)
    return subprocess.run([*CLINIGYM, *args], check=True, capture_output=True, text=True).stdout


def main() -> None:
    server = subprocess.Popen([sys.executable, "-m", "clinigym.testing.openai_server", "--family", FAMILY,
                               "--model", "ui-tars"], stdout=subprocess.PIPE, text=True)
    try:
        url = server_url(server)
        print(f"model server: {url}")
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp) / "run"
            clinigym("run", "--agent", "http", "--model-family", FAMILY, "--base-url", url, "--model", "ui-tars",
                     "--temperature", "0", "--max-tokens", "128", "--scenario", SCENARIO, "--out", str(run),
                     "--no-progress")
            summary = json.loads(clinigym("score", str(run), "--json"))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"TCA {summary['tca']:.0%} (tasks completed) and S1A {summary['s1a']:.0%} (first step right) over "
          f"{summary['n_tasks']} task(s); server stopped (exit {server.returncode})")


if __name__ == "__main__":
    main()
