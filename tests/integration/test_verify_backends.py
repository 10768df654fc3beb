"""The fused numba kernel and its numpy fallback give the same bits: the saved verify report of the
suite's verify cases (real onnxruntime builds of the shared TappedNet and MLP, and npz files with
every awkward input: non-finite values, all-non-finite and empty samples, int/bool/float16/float64,
rtol=0) is byte for byte the same JSON, the same CSVs and the same histogram arrays, whichever backend
ran. Only the creation time and the backend's name may differ."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import verify_models as vm
from leapp_lab.numerics.backend import BACKEND_ENV, resolve_backend
from leapp_lab.steps.verify import verify
from leapp_lab.model.jsonio import save_npz

try:
    import numba  # noqa: F401
    NUMBA_ERR = None
except Exception as exc:  # noqa: BLE001 - the fallback platform: nothing to compare against
    NUMBA_ERR = f"numba is not importable here ({type(exc).__name__}: {exc})"

pytestmark = pytest.mark.skipif(NUMBA_ERR is not None, reason=NUMBA_ERR or "")


def _odd_inputs(d: Path) -> tuple[Path, Path]:
    """A reference npz and a build folder whose rows cover every input the kernel branches on."""
    rng = np.random.default_rng(12)
    s = 3
    x = (rng.standard_normal((s, 70_001)) * np.exp(rng.uniform(-20, 20, (s, 70_001))))
    nan_e, nan_r = x * (1 + 1e-6 * rng.standard_normal(x.shape)), x.copy()
    nan_e[:, ::97] = np.nan
    nan_e[1, 5::1001] = np.inf
    nan_r[:, 3::501] = -np.inf
    f16 = rng.standard_normal((s, 4099)).astype(np.float32)
    ref = {"nonfinite": nan_r, "all_nan": np.ones((s, 300)), "empty": np.zeros((s, 0), np.float32),
           "ints": rng.integers(-1000, 1000, (s, 5000)).astype(np.int64),
           "bools": rng.random((s, 999)) > 0.5, "f16_vs_f32": f16,
           "f64_wide": x, "exact": f16.copy(), "big": rng.standard_normal((s, 300_000)).astype(np.float32)}
    eng = {"nonfinite": nan_e, "all_nan": np.full((s, 300), np.nan),
           "empty": np.zeros((s, 0), np.float32),
           "ints": rng.integers(-1000, 1000, (s, 5000)).astype(np.int32),
           "bools": rng.random((s, 999)) > 0.5, "f16_vs_f32": (f16 * 1.001).astype(np.float16),
           "f64_wide": x * (1 + 1e-9 * rng.standard_normal(x.shape)), "exact": f16.copy(),
           "big": ref["big"] + np.float32(1e-3) * rng.standard_normal(ref["big"].shape, dtype=np.float32)}
    build = d / "model.ort"
    build.mkdir(parents=True)
    save_npz(d / "model.reference.npz", ref)
    save_npz(build / "sample_outputs.npz", eng)
    return d / "model.reference.npz", build


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    _, net = vm.shared_net(tmp_path_factory)
    _, _, mlp = vm.shared_mlp(tmp_path_factory)
    from leapp_lab.steps.compile import compile
    mlp_build = compile(mlp["onnx"], engine="ort-fp16", naive_check=False)
    ref, build = _odd_inputs(tmp_path_factory.mktemp("odd"))
    return {"net-fp16": (net["reference"], vm.shared_build(tmp_path_factory, "ort-fp16").path, {}),
            "net-int8": (net["reference"], vm.shared_build(tmp_path_factory, "ort-int8").path, {"rtol": 0.0}),
            "mlp-fp16": (mlp["reference"], mlp_build.path, {}),
            "odd": (ref, build, {}), "odd-rtol0": (ref, build, {"rtol": 0.0, "div_mape": 1.0})}


def _saved(run: Path) -> dict:
    text = (run / "report.json").read_text()
    masked = re.sub(r'"created": "[^"]*"', '"created": "-"', text)
    masked = re.sub(r'"metrics_backend": "(numba|numpy)"', '"metrics_backend": "-"', masked)
    hists = {}
    for f in ("histograms.npz", "samples.npz"):     # per-sample histograms and records
        with np.load(run / f, allow_pickle=False) as z:
            hists.update({f"{f}:{k}": z[k] for k in z.files})
    return {"json": masked, "metrics.csv": (run / "metrics.csv").read_text(),
            "per_sample.csv": (run / "per_sample.csv").read_text(), "hists": hists}


@pytest.mark.parametrize("case", ["net-fp16", "net-int8", "mlp-fp16", "odd", "odd-rtol0"])
def test_numba_and_numpy_save_the_same_report(cases, case, tmp_path, monkeypatch):
    ref, build, kw = cases[case]
    saved = {}
    for backend in ("numba", "numpy"):
        monkeypatch.setenv(BACKEND_ENV, backend)
        rep = verify(ref, build, out=tmp_path / backend, **kw)
        assert rep.metrics_backend == backend
        assert json.loads((rep.path / "report.json").read_text())["metrics_backend"] == backend
        saved[backend] = _saved(rep.path)
    a, b = saved["numba"], saved["numpy"]
    assert a["json"] == b["json"]
    assert a["metrics.csv"] == b["metrics.csv"] and a["per_sample.csv"] == b["per_sample.csv"]
    assert a["hists"].keys() == b["hists"].keys()
    for k in a["hists"]:
        np.testing.assert_array_equal(a["hists"][k], b["hists"][k], err_msg=k)
    doc = json.loads(a["json"])
    compared = [r for r in doc["rows"] if r["status"] == "compared"]
    assert compared and any(r["mape"] for r in compared)  # something was really measured
    if case.startswith("odd"):
        rows = {r["name"]: r for r in doc["rows"]}
        assert rows["nonfinite"]["nonfinite_engine"] > 0 and rows["nonfinite"]["nonfinite_reference"] > 0
        assert rows["all_nan"]["mape"] is None and rows["all_nan"]["nonfinite_pairs"] == 900
        assert rows["empty"]["n"] == 0 and rows["exact"]["max_abs"] == 0.0
        assert rows["big"]["n"] == 3 * 300_000  # several blocks per sample


def test_backend_is_reported_in_text_and_json_rows(cases, tmp_path, monkeypatch):
    ref, build, _ = cases["odd"]
    monkeypatch.setenv(BACKEND_ENV, "numpy")
    rep = verify(ref, build, save=False, json_path=tmp_path / "rows.json")
    assert "metrics backend: numpy" in str(rep)
    assert json.loads((tmp_path / "rows.json").read_text())["metrics_backend"] == "numpy"
    monkeypatch.delenv(BACKEND_ENV)
    assert resolve_backend() == "numba"  # auto: numba where it imports
    assert verify(ref, build, save=False).metrics_backend == "numba"
