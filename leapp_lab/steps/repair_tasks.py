"""What a sweep worker runs: top-level functions of plain arguments (picklable for a process pool
or a Dask cluster). They read the model and samples from disk, write their own build folder, and
return a small dict; nothing large crosses the process boundary.
"""
from __future__ import annotations

import shutil
import time
from typing import Any


def build_and_verify(onnx: str, npz: str, reference: str, engine: str, keep_fp32: list[str], out: str,
                     keep: bool = False, verify_out: str | None = None, expected: str | None = None
                     ) -> dict[str, Any]:
    """Build ``engine`` with ``keep_fp32`` into ``out``, verify it against ``reference`` and return
    each model output's error (``leapp_lab.model.repair.output_error`` of its verify row) and each
    row's nrmse growth (verify's ``growth``); with ``expected`` (int8 | fp16) the verify has that
    expectation and each row's ``local_excess`` is returned too (``excess``). ``keep``: leave the build folder (and save the verify run under
    ``verify_out``); otherwise the folder is removed. A failed build is returned, not raised:
    ``{"ok": False, "reason": ...}``."""
    from leapp_lab.steps.verify import verify
    from leapp_lab.engines.base import CompileError
    from leapp_lab.steps.compile import compile as compile_
    from leapp_lab.model.repair import output_error

    t0 = time.perf_counter()
    res: dict[str, Any] = {"ok": False, "outputs": {}, "reasons": [], "growth": {}, "build": None,
                           "verify_run": None, "reason": None}
    try:
        try:
            compile_(onnx, engine=engine, npz=npz, out=out, naive_check=False, keep_fp32=keep_fp32 or None)
        except CompileError as exc:
            res["reason"] = f"build failed: {exc}"
            return res
        rep = verify(reference, out, save=keep, out=verify_out, expected=expected)
        if expected is not None:      # the baseline of repair --rank excess: each row's local excess
            res["excess"] = {r.name: r.local_excess for r in rep.rows if r.local_excess is not None}
            res["excess_warnings"] = list(rep.warnings)
        for r in rep.outputs:
            err, why = output_error(r)
            res["outputs"][r.name] = err
            if why:
                res["reasons"].append(why)
        res["growth"] = {r.name: r.growth for r in rep.rows if r.growth is not None}
        res["ok"] = True
        if keep:
            res["build"] = str(out)
            res["verify_run"] = str(rep.path) if rep.path else None
        return res
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
        res["seconds"] = round(time.perf_counter() - t0, 4)
