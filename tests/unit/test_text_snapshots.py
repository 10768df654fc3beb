"""Exact-string snapshots of the text renderers (``str(report)``): what a terminal or a CI log shows.

The reports are the deterministic hand-built fixtures of viewfixtures.py. After an intended change
to a renderer, regenerate with ``LEAPP_LAB_UPDATE_SNAPSHOTS=1 pytest tests/unit/test_text_snapshots.py``
and review the diff like any other change.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from leapp_lab.views.text_trace import render_diagnosis
from viewfixtures import trace_report, verify_report

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _verbose_verify():
    r = verify_report()
    r.verbose = True
    r.max_mape = 10.0
    r.exceeded, r.exit_code = ["output_0"], 1
    r.row("output_0").judged = r.row("output_0").exceeded = True
    return r


CASES = {
    "trace.txt": lambda: str(trace_report()),
    "trace_diagnosis.txt": lambda: render_diagnosis(trace_report()),
    "verify.txt": lambda: str(verify_report()),
    "verify_verbose_gate.txt": lambda: str(_verbose_verify()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_renderer_snapshot(name):
    text = CASES[name]() + "\n"
    path = SNAPSHOTS / name
    if os.environ.get("LEAPP_LAB_UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with LEAPP_LAB_UPDATE_SNAPSHOTS=1 once"
    assert text == path.read_text(encoding="utf-8")
