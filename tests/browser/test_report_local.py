"""verify --local --expected fp16 in the standalone HTML report, in real Chromium, offline: the
local-error and expected-drift columns in the accuracy table, the local nrmse series and the
first-locally-divergent mark on the error-growth profile."""
from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from harness import open_offline
from leapp_lab.views.html import to_html

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def local_report(tmp_path_factory):
    """conv_net (every tap), block1's weights perturbed in the engine only, ort-fp16, verified with
    --local --expected fp16."""
    import leapp_lab
    from tests.models.builds import prepared
    b = prepared("conv_net", taps=("all",))
    d = tmp_path_factory.mktemp("local")
    m = onnx.load(str(b.onnx))
    init = next(i for i in m.graph.initializer if i.name == "block1.0.weight")
    w = numpy_helper.to_array(init).copy()
    w += np.random.default_rng(0).standard_normal(w.shape).astype(np.float32) * np.float32(w.std() * 0.05)
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(m, str(d / "model.onnx"))
    shutil.copy(b.npz, d / "model.npz")
    build = leapp_lab.compile(d / "model.onnx", "ort-fp16", naive_check=False)
    return leapp_lab.verify(b.reference, build.path, out=d / "runs", local=True, expected="fp16")


def test_local_and_expected_columns_and_profile_offline(page, local_report, tmp_path, artifacts_dir):
    rep = local_report
    assert rep.first_locally_divergent == "block1" and rep.first_beyond_expected == "block1"
    f = tmp_path / "verify.html"
    to_html(rep, f)
    blocked = open_offline(page, f, "[data-leapp-hist-row] .main-svg", timeout=15000)
    heads = "() => [...document.querySelectorAll('th[data-leapp-col]')].map(e => e.dataset.leappCol)"
    cols = page.evaluate(heads)
    judged_by = "local_excess" if any(r.local_excess is not None for r in rep.rows) else "expected_nrmse"
    for key in ("local_nrmse", "local_share", judged_by, "beyond_expected"):
        assert key in cols, key
    # the columns the finding does not cite are behind "columns" (issue 21, Deliver 2)
    assert "local_cosine" not in cols
    page.click(".leapp-colmenu summary")
    page.check("[data-leapp-col-toggle='local_cosine']")
    cols = page.evaluate(heads)
    assert "local_cosine" in cols
    # the broken layer's row: beyond expected, its own share ~1
    cells = page.evaluate("""() => [...document.querySelector("tr[data-leapp-row='block1']").children]
                                   .map(td => td.textContent.trim())""")
    row = dict(zip(cols, cells[len(cells) - len(cols):]))
    from leapp_lab.views.numfmt import fmt
    assert row["beyond_expected"] == "yes" and float(row["local_share"]) > 0.99
    assert row["local_nrmse"] == fmt(rep.row("block1").local_nrmse, "num")
    stem = page.evaluate("""() => [...document.querySelector("tr[data-leapp-row='stem']").children]
                                  .map(td => td.textContent.trim())""")
    assert dict(zip(cols, stem[len(stem) - len(cols):]))["beyond_expected"] == "no"
    # sort by local nrmse: the broken layer first
    page.click("th[data-leapp-col='local_nrmse']")
    first = page.evaluate("() => document.querySelector('tr[data-leapp-row]').dataset.leappRow")
    assert first == "block1"
    # profile: the local nrmse series, dotted (first divergent: none here) and dashed marks
    page.click("[data-leapp-tab='profile']")
    page.wait_for_selector(".leapp-profile .main-svg")
    options = page.evaluate("() => [...document.querySelectorAll('select[data-leapp-profile-metric] option')].map(o => o.value)")
    assert "local_nrmse" in options and "expected_nrmse" in options
    page.select_option("select[data-leapp-profile-metric]", "local_nrmse")
    page.wait_for_function("() => (document.querySelector('.leapp-profile .gtitle') || {}).textContent"
                           " && document.querySelector('.leapp-profile .gtitle').textContent.startsWith('local NRMSE')")
    # the marks, and the rule's threshold on the local series (issue 21, Deliver 3: it had none)
    assert page.locator(".leapp-profile .shapelayer path").count() == \
        2 + (rep.first_divergent is not None) + (rep.first_beyond_expected is not None)
    assert "rule: local NRMSE > 0.01" in page.inner_text(".leapp-profile")
    assert "first locally divergent" in page.inner_text(".leapp-profile-panel, body")   # the marked row
    page.screenshot(path=str(artifacts_dir / "report_verify_local_profile.png"), full_page=True)
    assert blocked == [] and page.errors == []
