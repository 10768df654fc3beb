"""One name per metric and per threshold (issue 18, Deliver 3): report.json written before the
renames still loads, each old key under its new name (docs/schema-verify.md, docs/schema-trace.md,
"Renamed fields")."""
from __future__ import annotations

import json

import viewfixtures as vf

import leapp_lab
from leapp_lab.model.verify import DivergenceRule


def _rewrite(path, edit) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_verify_report_with_the_old_rule_names_loads(tmp_path):
    """The rule's thresholds are named as verify's options (div_nrmse=, --div-nrmse): a report that
    wrote nrmse_pct / mape_pct / min_cosine / nonfinite loads with those values."""
    rep = vf.verify_report(tmp_path)
    rep.rule = DivergenceRule(div_nrmse=2.0, div_mape=5.0, div_cosine=0.99, div_nonfinite=False)
    folder = rep.save(tmp_path / "run")
    written = json.loads((folder / "report.json").read_text(encoding="utf-8"))["rule"]
    assert {"div_nrmse", "div_mape", "div_cosine", "div_nonfinite"} <= set(written)
    assert not {"nrmse_pct", "mape_pct", "min_cosine", "nonfinite"} & set(written)

    def old(doc):
        doc["rule"] = {"nrmse_pct": 3.0, "mape_pct": 7.0, "min_cosine": 0.95, "nonfinite": False, "text": "old"}
    _rewrite(folder / "report.json", old)
    back = leapp_lab.load(folder).rule
    assert (back.div_nrmse, back.div_mape, back.div_cosine, back.div_nonfinite) == (3.0, 7.0, 0.95, False)
    assert back.thresholds() == {"nrmse": (0.03, "above"), "mape": (7.0, "above"), "cosine": (0.95, "below")}

    def older(doc):               # before nrmse was a criterion: judged by mape alone
        doc["rule"] = {"mape_pct": 7.0, "min_cosine": 0.95, "nonfinite": True, "text": "older"}
    _rewrite(folder / "report.json", older)
    assert leapp_lab.load(folder).rule.div_nrmse is None


def test_deep_check_sections_with_the_old_max_names_load(tmp_path):
    """The largest |difference| is ``max_abs`` in every section (replay outputs, parity outputs,
    exporter attempts, as in verify's rows): section files that wrote ``max`` / ``fp32_max`` /
    ``max_diff`` load under it, and a new file writes only ``max_abs``."""
    from leapp_lab.model.sections import load_section
    old = {
        "replay": {"status": "ok", "tier": "a", "closed_loop": {
            "tier": "a", "status": "ok", "steps": 3,
            "outputs": [{"output": "policy/action", "steps": 3, "first": 0.1, "last": 0.3, "max": 0.3,
                         "max_step": 2, "fp32_max": 0.25}],
            "rows": [{"step": 0, "output": "policy/action", "max_abs": 0.1}]}},
        "parity": {"status": "diverged", "n": 2,
                   "outputs": [{"output": "policy/action", "samples": 2, "failed": 1, "max": 0.5}]},
        "exporters": {"status": "ok", "nodes": ["policy"], "backends": ["onnx"],
                      "attempts": [{"node": "policy", "backend": "onnx", "outcome": "pass", "max_diff": 1e-6}]},
    }
    for name, data in old.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    replay = load_section(tmp_path, "replay")
    out = replay.closed_loop.outputs[0]
    assert (out.max_abs, out.max_step, out.fp32_max_abs) == (0.3, 2, 0.25)
    assert load_section(tmp_path, "parity").outputs[0].max_abs == 0.5
    assert load_section(tmp_path, "exporters").attempts[0].max_abs == 1e-6
    written = json.dumps([replay.to_dict(), load_section(tmp_path, "parity").to_dict(),
                          load_section(tmp_path, "exporters").to_dict()])
    assert '"max_abs"' in written and not any(f'"{k}"' in written for k in ("max", "fp32_max", "max_diff"))
