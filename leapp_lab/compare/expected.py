"""Expected drift (``verify(..., expected="fp16"|"bf16")``): what precision alone would cause.

The model is re-run in torch eager in that dtype on the same samples (``leapp_lab.taps.lowprec``,
from the MODEL.py prepare recorded in ``<onnx dir>/<stem>.prepare/report.json``), each row's
low-precision value is scored against the reference with the verify kernel (``diff_sums`` ->
``Metrics``): ``expected_nrmse``. A row whose engine nrmse exceeds the ExpectedRule's limit is
``beyond_expected``. When the model cannot be re-run (no prepare report, MODEL.py moved or edited,
an op without a low-precision torch kernel) the report says why in its warnings; the verify never
fails for it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from leapp_lab.model.jsonio import load_npz, read_json
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.verify import ExpectedRule, VerifyReport

from .buildio import OpenBuild
from .metrics import diff_sums
from .npzio import NpzArrays

PREPARE_SUFFIX = ".prepare"


def _onnx_candidates(build: OpenBuild, ref_path: Path) -> list[Path]:
    """Where the prepared ONNX may be: build.json's ``onnx`` (as written, beside the build, beside
    the reference), else ``<stem>.onnx`` beside ``<stem>.reference.npz``."""
    out: list[Path] = []
    onnx = build.report.onnx if build.report is not None else ""
    if onnx:
        p = Path(onnx)
        out += [p, build.path.parent / p.name, ref_path.parent / p.name]
    if ref_path.name.endswith(".reference.npz"):
        out.append(ref_path.with_name(ref_path.name[: -len(".reference.npz")] + ".onnx"))
    return list(dict.fromkeys(out))


def find_model(build: OpenBuild, ref_path: Path) -> tuple[Path | None, dict[str, Any] | str]:
    """(MODEL.py, the prepare report as a dict), or (None, why not)."""
    reports = [c.parent / f"{c.stem}{PREPARE_SUFFIX}" / "report.json" for c in _onnx_candidates(build, ref_path)]
    found = next((r for r in reports if r.is_file()), None)
    if found is None:
        return None, ("no prepare report (" + ", ".join(str(r) for r in reports[:2]) +
                      "): the model that made the reference is unknown; prepare writes it beside the ONNX")
    try:
        d = read_json(found)
    except (OSError, ValueError) as exc:
        return None, f"{found}: unreadable ({exc})"
    label = d.get("model") if isinstance(d, dict) else None
    if not isinstance(label, str) or not label or label.startswith("<"):
        return None, (f"{found}: the model was prepared from a Python object ({label!r}), not a MODEL.py "
                      "file: there is nothing to re-run")
    p = Path(label)
    cands = [p] if p.is_absolute() else [Path(os.getcwd()) / p, found.parent.parent / p,
                                         found.parent.parent / p.name]
    model = next((c for c in cands if c.is_file()), None)
    if model is None:
        return None, (f"the MODEL.py prepare recorded ({label}, in {found}) is not there any more "
                      "(moved or deleted?); run verify from the folder prepare ran in, or re-run prepare")
    return model, d


def _skip(report: VerifyReport, why: str) -> None:
    report.warnings.append(f"[{report.build_name}]: no expected {report.expected.dtype} drift: {why}")
    for r in report.rows:
        if r.status == "compared":
            r.expected_note = why


def expected_drift(report: VerifyReport, rule: ExpectedRule, build: OpenBuild, ref: NpzArrays,
                   ref_path: Path, inputs_npz: Path | None) -> None:
    """Fill ``expected_nrmse`` / ``beyond_expected`` of every compared row of ``report``."""
    report.expected = rule
    model, prep = find_model(build, ref_path)
    if model is None:
        return _skip(report, prep)
    try:
        from leapp_lab.taps.lowprec import ExpectedUnavailable, lowprec_values
    except ImportError as exc:  # torch is needed to re-run the model
        return _skip(report, f"torch is not importable ({exc})")
    rows = [r for r in report.rows if r.status == "compared"]
    try:
        inputs = load_npz(inputs_npz) if inputs_npz is not None else None
        runs = lowprec_values(model, rule.dtype, rows, inputs=inputs, reference=ref,
                              requested_taps=prep.get("requested_taps"),
                              exporter=prep.get("exporter") or "dynamo")
    except ExpectedUnavailable as exc:
        return _skip(report, str(exc))
    except Exception as exc:  # noqa: BLE001 - user code ran: whatever it raised, the verify goes on
        return _skip(report, f"re-running {model} failed: {type(exc).__name__}: {exc}")
    for r in rows:
        vals = runs.values.get(r.name)
        if vals is None:
            r.expected_note = runs.reasons.get(r.name, "torch gives no value of this name")
            continue
        ref_a = ref[r.name]
        if len(vals) != ref_a.shape[0] or any(v.shape != ref_a.shape[1:] for v in vals):
            r.expected_note = (f"torch's {rule.dtype} value has shape {vals[0].shape}, the reference "
                               f"{tuple(ref_a.shape[1:])}")
            continue
        total = None
        for i, v in enumerate(vals):
            st = diff_sums(v, ref_a[i])
            total = st if total is None else total.merge(st)
        r.expected_nrmse = Metrics().fill(total).nrmse
        r.beyond_expected = r.in_rule and rule.beyond(r.nrmse, r.expected_nrmse)
    report.beyond_expected = [r.name for r in report.rows if r.beyond_expected]
    report.first_beyond_expected = report.beyond_expected[0] if report.beyond_expected else None
