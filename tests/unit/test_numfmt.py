"""One number format: the Python rule (model/numfmt.py: text and static HTML) and the front-end's
``fmt`` (extensions/src/shared/format.js, as bundled in extensions/leapp_view.js) give the same
string for the same value and format. The spec both implement is tests/data/numfmt_cases.json
(extensions/test/format.test.js reads it too)."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from leapp_lab.model.hist import bin_lower_edge
from leapp_lab.views import assets
from leapp_lab.views.numfmt import fmt, fmt_exp

CASES = Path(__file__).resolve().parents[1] / "data" / "numfmt_cases.json"
FORMAT_JS = Path(__file__).resolve().parents[2] / "extensions" / "src" / "shared" / "format.js"

KINDS = ("num", "int", "cos", "x", "text", "shape")


def _values() -> list:
    rng = np.random.default_rng(7)
    fixed = [0.0, -0.0, 1.0, -1.0, 2.5, 12345.6, -12345.6, 9999.4, 9999.5, 9999.96, 0.001, 0.00099996,
             0.0099995, 1e-7, 123456789.0, 123456789.5, 1e15, 1e16, 1e21, 5e-324, 1.7976931348623157e308,
             1 / 3, -2 / 3, 0.12345, 12.125, 0.0078125, 0.9999995, 0.99999949, -0.0000004, 1.0005, 3.14159,
             float("nan"), float("inf"), float("-inf"), 7, -42, 10 ** 6, 10 ** 16, 0]
    spread = (rng.standard_normal(300) * 10.0 ** rng.integers(-12, 12, 300)).tolist()
    ties = [k / 8 for k in range(1, 200, 3)] + [k / 1024 for k in range(1, 100, 7)]
    return fixed + spread + ties


def _js_fmt(cases: list[tuple[str, str]]) -> list[str]:
    """``fmt`` of the shipped bundle, imported as the ES module it is, and (where the kind is a number
    of decimals) ``fmtExp`` of its source module (the bundle is that source: test_frontend.py), run
    by node."""
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed (scripts/install.sh --dev installs Debian's nodejs)")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        mod = Path(tmp) / "view.mjs"            # .mjs: an ES module wherever the bundle was installed
        mod.write_text(assets.renderer_js(), encoding="utf-8")
        script = Path(tmp) / "run.mjs"
        script.write_text(
            "import { readFileSync } from 'node:fs';\n"
            "import { fmt } from './view.mjs';\n"
            f"import {{ fmtExp }} from {json.dumps(FORMAT_JS.as_uri())};\n"
            "const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));\n"
            "const parse = s => s.t === 'n' ? Number(s.v) : s.t === 'l' ? s.v.map(Number) : s.v;\n"
            "console.log(JSON.stringify(cases.map(([v, k]) => typeof k === 'number' ? fmtExp(parse(v), k) : fmt(parse(v), k))));\n",
            encoding="utf-8")
        (Path(tmp) / "cases.json").write_text(json.dumps(cases), encoding="utf-8")   # too long for argv
        out = subprocess.run([node, str(script), str(Path(tmp) / "cases.json")], capture_output=True, text=True,
                             timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _enc(v):
    if v is None:
        return {"t": "z", "v": None}
    if isinstance(v, bool):
        return {"t": "b", "v": v}
    if isinstance(v, (list, tuple)):
        return {"t": "l", "v": [repr(float(x)) if isinstance(x, float) else str(x) for x in v]}
    if isinstance(v, str):
        return {"t": "s", "v": v}
    if isinstance(v, float):
        return {"t": "n", "v": "NaN" if math.isnan(v) else repr(v).replace("inf", "Infinity")}
    return {"t": "n", "v": str(v)}


def test_python_and_js_format_every_value_alike():
    values = _values()
    cases = [(v, k) for v in values for k in ("num", "cos", "x")]
    cases += [(v, "int") for v in (0, 7, -42, 10 ** 6, 10 ** 14, 3.0)]
    cases += [(None, k) for k in KINDS] + [(True, "bool"), (False, "bool"), ("a <b>", "text"),
                                           ([1, 3, 8], "shape"), ([], "shape"), ([0.5, 12345.6], "num")]
    # the histograms' bin edges (tick labels and hover ranges), ties included (1.25 x 2^k)
    cases += [(float(bin_lower_edge(b)), d) for b in range(4 * 900, 4 * 1100, 3) for d in (1, 2)]
    cases += [(v, d) for v in values if isinstance(v, float) for d in (0, 1, 2)]
    py = [fmt_exp(v, k) if isinstance(k, int) else fmt(v, k) for v, k in cases]
    js = _js_fmt([(_enc(v), k) for v, k in cases])
    diff = [(v, k, a, b) for (v, k), a, b in zip(cases, py, js) if a != b]
    assert not diff, f"{len(diff)} of {len(cases)} differ, e.g. {diff[:8]}"


def _case_value(v):
    return float(v["float"]) if isinstance(v, dict) else v


def test_the_shared_table():
    """Each case of the spec both implementations read (the node test: extensions/test/format.test.js)."""
    doc = json.loads(CASES.read_text(encoding="utf-8"))
    assert len(doc["cases"]) > 150
    wrong = []
    for c in doc["cases"]:
        v = _case_value(c["value"])
        got = fmt_exp(v, c["exp"]) if "exp" in c else fmt(v, c["kind"])
        if got != c["text"]:
            wrong.append((c, got))
    assert not wrong, wrong[:5]
    # the histogram figure's tick labels are fmt_exp's (the view's: histogram.js, fmtExp)
    assert fmt_exp(1e-3) == "1.0e-3" and fmt_exp(1.25) == "1.3e+0" and fmt_exp(None) == "–"


@pytest.mark.parametrize("value,kind,text", [
    (12345.6, "num", "1.235e+04"),       # the disagreement this rule settled (JS once printed 12350)
    (0.0012345, "num", "0.001234"), (1234.5, "num", "1235"), (9999.96, "num", "1.000e+04"),
    (12.125, "num", "12.13"),            # ties round away from zero on the exact value, like JS
    (3.0, "num", "3"), (None, "num", "–"), (float("nan"), "num", "nan"), (-float("inf"), "num", "-inf"),
    (0.9999995, "cos", "1.000000"), (0.99949, "cos", "0.999490"), (2.5, "x", "2.5x"),
    ([2, 3], "shape", "[2, 3]"), (True, "bool", "yes"),
])
def test_the_rule(value, kind, text):
    assert fmt(value, kind) == text


def test_text_and_messages_format_numbers_by_the_one_rule():
    """The deep checks' text, the nodes' text and the trace's hazard sentences write numbers with
    ``fmt`` (a missing one as "–", no longer "-" or "n/a"); numpy scalars print as their value."""
    from leapp_lab.deep.growth import trend_text
    from leapp_lab.trace import hazard_samples
    from leapp_lab.views import text_deep, text_nodes
    for v in (None, 0.000123456, 12345.6, np.float32(0.1234567), np.float64(2.5)):
        assert text_deep._g(v) == hazard_samples._g(v) == fmt(v)
    assert fmt(None) == "–" and fmt(np.float32(0.5)) == "0.5" and fmt(np.int64(7)) == "7"
    assert text_nodes._pct(None) == "–" and text_nodes._pct(0.012345) == fmt(1.2345) + "%"
    assert fmt(1.23456) in trend_text(1.23456, "grows")


def test_the_histogram_figure_labels_its_bins_as_the_view_does():
    """The plotly figure (views/figures.py) and the view's histogram (histogram.js, whose node test
    expects these very strings for this histogram) write bin edges with one rule: fmt_exp / fmtExp."""
    pytest.importorskip("plotly", reason="plotly is in the dev extra (pip install -e '.[dev]')")
    from leapp_lab.views.figures import hist_figure
    hist = {"zero": 5, "counts": [1, 0, 3], "first_bin": 1023 * 4, "nonfinite": 2}
    row = {"id": "r", "default_sample": "all", "samples": [{"key": "all", "label": "all", "hist": hist}]}
    fig = hist_figure(row, nonfinite_label="NaN or inf")
    assert list(fig.layout.xaxis.ticktext) == ["0", "1.0e+0", "1.3e+0", "1.5e+0", "non-finite"]
    assert list(fig.data[0].text) == ["exactly 0", "[1.00e+0, 1.25e+0)", "[1.25e+0, 1.50e+0)", "[1.50e+0, 1.75e+0)",
                                      "NaN or inf"]
