"""Benchmark and study: ``verify --expected int8``.

Parts (all by default; ``--part`` picks one):

* ``study``: the fault study on two architectures: a MobileNetV2-class conv net
  (``tests/models/mobilenet_blocks.py``: stem, ``--blocks`` inverted-residual blocks, a tap after
  each) and a ViT (``tests/models/vit_blocks.py``: ``--layers`` pre-norm encoder layers, hidden
  192, a tap after each). Each is built ``ort-int8`` from a copy of the prepared ONNX in which one
  weight (a Conv, a MatMul) of one unit is perturbed by a few percent (three kinds; the reference
  untouched), over ``--trials`` seeded trials cycling through the kinds and spread over the units.
  Per trial: is the faulted unit ``worst_local`` AND ``first_beyond_expected`` (the report's
  verdict: its departure from its own int8 simulation), beside the excess ratio's ranking (largest
  ``local_excess``, first over its factor) and the plain ones (largest ``local_nrmse``, first
  locally divergent, first divergent). The unperturbed build: which rows are beyond.
* ``calibrate``: clean ``ort-int8`` builds of the test models (conv nets, MLPs, the ViT, a
  recurrent policy; manual and op taps): every row's local excess and sim excess, and how many
  rows each factor would flag (the false-alarm rates).
* ``cost``: a ``verify --local`` and a ``verify --expected int8`` of the same build, alternating,
  best of ``--repeat``; the ratio (target <= 2).
* ``repair``: ``repair --rank output`` against ``--rank excess`` on clean int8 builds.

    .venv/bin/python bench/bench_expected_int8.py                      # everything (~15 min here)
    .venv/bin/python bench/bench_expected_int8.py --part study --trials 24
    .venv/bin/python bench/bench_expected_int8.py --part cost --repeat 5
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tests" / "models"
KINDS = ("scale", "noise", "channel")


#: the study's architectures: (test model, the module prefix of its faulted units, the row of unit k,
#: the environment variable that sets its depth)
STUDY_MODELS = {"mobilenet_blocks": ("blocks", "b", "LEAPP_LAB_MBV2_BLOCKS"),
                "vit_blocks": ("layers", "l", "LEAPP_LAB_VIT_LAYERS")}


def perturb_weight(w: np.ndarray, kind: str, rng: np.random.Generator, axis: int = 0,
                   magnitude: float = 1.0) -> tuple[np.ndarray, str]:
    """``w`` with a fault of a few percent of its norm: ``scale`` the whole kernel x(1 +- 1..5 %);
    ``noise`` Gaussian noise of 2.5..5 % of its std; ``channel`` one output channel (along ``axis``:
    0 for a Conv kernel, 1 for a MatMul weight stored input x output) changed by 3..5 % of the
    kernel's norm. ``magnitude`` scales those percentages (0.3: faults of 0.3..1.5 %)."""
    w = w.astype(np.float32).copy()
    if kind == "scale":
        f = 1 + rng.choice([-1, 1]) * rng.uniform(0.01, 0.05) * magnitude
        return (w * np.float32(f)).astype(np.float32), f"x{f:.4f}"
    if kind == "noise":
        s = rng.uniform(0.025, 0.05) * magnitude
        return (w + rng.standard_normal(w.shape).astype(np.float32) * np.float32(w.std() * s)), f"noise {s:.3f} std"
    if kind == "channel":
        wc = np.moveaxis(w, axis, 0)            # a view: scaling a channel of it scales w's
        norms = np.sqrt((wc.reshape(wc.shape[0], -1).astype(np.float64) ** 2).sum(1))
        c = int(rng.integers(wc.shape[0]))
        r = rng.uniform(0.03, 0.05) * magnitude * np.sqrt((norms ** 2).sum()) / max(norms[c], 1e-12)
        f = 1 + rng.choice([-1, 1]) * r
        wc[c] *= np.float32(f)
        return w, f"channel {c} x{f:.3f}"
    raise ValueError(kind)


def unit_weights(model_onnx: Path, prefix: str, unit: int) -> list[tuple[str, int]]:
    """(weight, output-channel axis) of the Conv / MatMul / Gemm nodes of module ``<prefix>.<unit>``
    in the prepared ONNX, in model order (the dynamo exporter's scope metadata, or the TorchScript
    exporter's node names ``/<prefix>.<unit>/...``)."""
    import onnx

    from leapp_lab.onnxio.manifest import module_scope
    m = onnx.load(str(model_onnx), load_external_data=False)
    inits = {i.name: i for i in m.graph.initializer}
    out: list[tuple[str, int]] = []
    for n in m.graph.node:
        scope = (module_scope(n) or "") + "."
        if n.op_type not in ("Conv", "MatMul", "Gemm"):
            continue
        if not (scope.startswith(f"{prefix}.{unit}.") or n.name.startswith(f"/{prefix}.{unit}/")):
            continue
        w = n.input[1] if len(n.input) > 1 else ""
        if w in inits and len(inits[w].dims) >= 2 and w not in [x for x, _ in out]:
            trans_b = next((a.i for a in n.attribute if a.name == "transB"), 0)
            out.append((w, 1 if n.op_type == "MatMul" or (n.op_type == "Gemm" and not trans_b) else 0))
    return out


def block_convs(model_onnx: Path, block: int) -> list[str]:
    """The conv weights of block ``block`` of the MobileNetV2-class net, in model order."""
    return [w for w, _ in unit_weights(model_onnx, "blocks", block)]


def faulted_build(prepared: Path, out: Path, weight: str, kind: str, seed: int, axis: int = 0,
                  magnitude: float = 1.0):
    """Compile ``ort-int8`` from a copy of ``prepared/model.onnx`` with ``weight`` perturbed."""
    import onnx
    from onnx import numpy_helper

    from leapp_lab.steps.compile import compile

    out.mkdir(parents=True, exist_ok=True)
    m = onnx.load(str(prepared / "model.onnx"))
    init = next(i for i in m.graph.initializer if i.name == weight)
    w, what = perturb_weight(numpy_helper.to_array(init), kind, np.random.default_rng(seed), axis, magnitude)
    init.CopyFrom(numpy_helper.from_array(w, weight))
    onnx.save(m, str(out / "model.onnx"))
    shutil.copy(prepared / "model.npz", out / "model.npz")
    return compile(out / "model.onnx", "ort-int8", out=out / "model.ort-int8", naive_check=False), what


def excess_verdicts(v, factor: float | None = None) -> tuple[str | None, str | None]:
    """(largest local excess, first row whose excess is over the factor): the excess ratio's
    ranking, read from the rows whatever ranking the report itself used."""
    f = v.expected.factor if factor is None else factor
    rows = [r for r in v.rows if r.in_rule and r.local_excess is not None]
    pool = [r for r in rows if r.is_tap] or rows
    worst = max(pool, key=lambda r: r.local_excess).name if pool else None
    first = next((r.name for r in rows if r.local_excess > f), None)
    return worst, first


def trial(prepared: Path, work: Path, seed: int, blocks: int, kind: str | None = None,
          block: int | None = None, model: str = "mobilenet_blocks", magnitude: float = 1.0) -> dict:
    """One seeded trial: a unit (block, layer), one of its weights and a fault kind; the verify's
    verdicts, and the excess ratio's beside them."""
    from leapp_lab.steps.verify import verify

    prefix, row, _ = STUDY_MODELS[model]
    rng = np.random.default_rng(1000 + seed)
    block = int(rng.integers(blocks)) if block is None else block
    kind = KINDS[seed % len(KINDS)] if kind is None else kind
    weights = unit_weights(prepared / "model.onnx", prefix, block)
    weight, axis = weights[int(rng.integers(len(weights)))]
    build, what = faulted_build(prepared, work / f"t{seed}", weight, kind, seed, axis, magnitude)
    v = verify(prepared / "model.reference.npz", build.path, save=False, expected="int8")
    name = f"{row}{block}"
    taps = [r for r in v.rows if r.in_rule and r.is_tap and r.local_nrmse is not None]
    by_local = max(taps, key=lambda r: r.local_nrmse).name
    ex_worst, ex_first = excess_verdicts(v)
    shutil.rmtree(work / f"t{seed}", ignore_errors=True)
    return {"seed": seed, "block": name, "weight": weight, "kind": kind, "fault": what,
            "worst_local": v.worst_local, "first_beyond": v.first_beyond_expected,
            "beyond": v.beyond_expected, "worst_local_nrmse": by_local,
            "first_locally_divergent": v.first_locally_divergent, "first_divergent": v.first_divergent,
            "excess": v.row(name).local_excess, "sim_local": v.row(name).sim_local_nrmse,
            "sim_excess": v.row(name).sim_excess,
            "excesses": {r.name: r.local_excess for r in v.rows if r.local_excess is not None},
            "sims": {r.name: r.sim_local_nrmse for r in v.rows if r.sim_local_nrmse is not None},
            "worst_excess": ex_worst, "first_excess": ex_first,
            "hit": v.worst_local == name and v.first_beyond_expected == name,
            "hit_worst": v.worst_local == name, "hit_first_beyond": v.first_beyond_expected == name,
            "hit_excess_both": ex_worst == name and ex_first == name,
            "hit_excess": ex_worst == name, "hit_excess_first": ex_first == name,
            "hit_local_nrmse": by_local == name, "hit_first_local": v.first_locally_divergent == name,
            "hit_first_divergent": v.first_divergent == name}


def prepare_model(name: str, root: Path, op: bool = False, env: dict | None = None) -> Path:
    import leapp_lab
    d = root / (name + ("-op" if op else ""))
    d.mkdir(parents=True, exist_ok=True)
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        leapp_lab.prepare(str(MODELS / f"{name}.py"), d / "model.onnx", d / "model.npz",
                          d / "model.reference.npz", debug_taps=["all"], op_taps=op)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return d


def study(root: Path, trials: int, blocks: int, model: str = "mobilenet_blocks", magnitude: float = 1.0) -> dict:
    """The fault study on ``model`` (``STUDY_MODELS``) of ``blocks`` units: ``trials`` seeded
    trials; the hit rate of the report's verdict (the faulted unit is ``worst_local`` AND
    ``first_beyond_expected``) beside the excess ratio's and the plain rankings'."""
    from leapp_lab.steps.compile import compile
    from leapp_lab.steps.verify import verify

    t = time.perf_counter()
    d = prepare_model(model, root, env={STUDY_MODELS[model][2]: str(blocks)})
    print(f"study: {model}, {blocks} units, fault magnitude x{magnitude:g} (prepared in {time.perf_counter() - t:.0f}s)")
    clean = compile(d / "model.onnx", "ort-int8", out=d / "clean.ort-int8", naive_check=False)
    v = verify(d / "model.reference.npz", clean.path, save=False, expected="int8")
    ex = [r.local_excess for r in v.rows if r.local_excess is not None]
    sims = {r.name: r.sim_local_nrmse for r in v.rows if r.sim_local_nrmse is not None}
    print(f"  unperturbed: beyond expected {v.beyond_expected or 'none'}; local excess "
          f"{min(ex):.4f}..{max(ex):.4f}; sim_local_nrmse up to {max(sims.values(), default=0):.2e}; "
          f"first divergent {v.first_divergent}, first locally divergent {v.first_locally_divergent}")
    rows = []
    for s in range(trials):
        r = trial(d, root / "trials", s, blocks, model=model, magnitude=magnitude)
        rows.append(r)
        print(f"  trial {s:2d} {r['block']:>4} {r['weight']:<22} {r['fault']:<20} sim_local "
              f"{r['sim_local'] if r['sim_local'] is not None else float('nan'):.2e} sim excess "
              f"{r['sim_excess'] if r['sim_excess'] is not None else float('nan'):.3f} excess "
              f"{r['excess']:.3f} | worst_local {r['worst_local']:<5} first beyond {r['first_beyond'] or '-':<5}"
              f" | excess ranking {'hit' if r['hit_excess_both'] else 'miss'}")
    keys = ("hit", "hit_worst", "hit_first_beyond", "hit_excess_both", "hit_excess", "hit_excess_first",
            "hit_local_nrmse", "hit_first_local", "hit_first_divergent")
    score = {k: sum(r[k] for r in rows) for k in keys}
    n = max(trials, 1)
    print(f"  {trials} trials, {model}: the faulted unit is worst_local AND first_beyond_expected in "
          f"{score['hit']}/{trials} ({100 * score['hit'] / n:.0f} %) [worst_local {score['hit_worst']}, first "
          f"beyond {score['hit_first_beyond']}]; the excess ratio alone: {score['hit_excess_both']}/{trials} "
          f"({100 * score['hit_excess_both'] / n:.0f} %) [largest excess {score['hit_excess']}, first over "
          f"the factor {score['hit_excess_first']}]; plain: largest local_nrmse {score['hit_local_nrmse']}, "
          f"first locally divergent {score['hit_first_local']}, first divergent {score['hit_first_divergent']}")
    fx = [r["excess"] for r in rows if r["excess"] is not None]
    fs = [r["sim_excess"] for r in rows if r["sim_excess"] is not None]
    if fx and fs:
        print(f"  the faulted unit's local excess {min(fx):.3f}..{max(fx):.3f} (factor 1.05); its sim excess "
              f"{min(fs):.3f}..{max(fs):.3f} (factor {v.expected.sim_factor:g}; clean rows up to "
              f"{max([r.sim_excess for r in v.rows if r.sim_excess is not None], default=0):.3f})")
    for kind in KINDS:
        k = [r for r in rows if r["kind"] == kind]
        if k:
            print(f"    {kind:8s}: simulation {sum(r['hit'] for r in k)}/{len(k)}, excess ratio "
                  f"{sum(r['hit_excess_both'] for r in k)}/{len(k)}, largest local_nrmse "
                  f"{sum(r['hit_local_nrmse'] for r in k)}/{len(k)}")
    return {"model": model, "blocks": blocks, "trials": rows, "score": score,
            "clean_beyond": v.beyond_expected, "clean_excess": [min(ex), max(ex)], "clean_sim": sims}


CALIBRATION = (("conv_net", False), ("conv_net", True), ("mlp_policy", False), ("mlp_policy", True),
               ("sequential_taps", False), ("outlier_mlp", False), ("deep_mlp", False),
               ("mobilenet_blocks", False), ("mobilenet_blocks", True), ("vit_blocks", False),
               ("vit_blocks", True), ("recurrent_policy", False), ("recurrent_policy", True))


def _transformer(root: Path) -> Path:
    """bench_local's 6-layer transformer encoder (LayerNorm, softmax attention, GELU), seq 16."""
    import torch

    import leapp_lab
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_local import make_transformer
    d = root / "transformer"
    d.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(1)
    leapp_lab.prepare({"model": make_transformer(), "samples": [(torch.randn(1, 16, 128, generator=g),)
                                                               for _ in range(4)]},
                      d / "model.onnx", d / "model.npz", d / "model.reference.npz", debug_taps=["all"])
    return d


def calibrate(root: Path, factors=(1.001, 1.01, 1.02, 1.05, 1.1), sim_factors=(0.05, 0.1, 0.15, 0.25, 0.5)) -> dict:
    """Clean ``ort-int8`` builds of the test models: every row's local excess and departure from the
    simulation (sim excess), and how many rows each factor would flag (the false-alarm rates)."""
    from leapp_lab.steps.compile import compile
    from leapp_lab.steps.verify import verify

    out, excess, sims = {}, [], []
    for name, op in [*CALIBRATION, ("transformer", False)]:
        if name == "transformer":
            d = _transformer(root / "cal")
        else:
            d = prepare_model(name, root / "cal", op, env={"LEAPP_LAB_MBV2_BLOCKS": "14", "LEAPP_LAB_VIT_LAYERS": "8"})
        b = compile(d / "model.onnx", "ort-int8", naive_check=False)
        v = verify(d / "model.reference.npz", b.path, save=False, expected="int8")
        ex = [(r.name, r.local_excess, r.local_nrmse) for r in v.rows if r.local_excess is not None]
        sx = [(r.name, r.sim_excess) for r in v.rows if r.sim_excess is not None]
        notes = [r.name for r in v.rows if r.in_rule and r.sim_note]
        excess += [e for _, e, _ in ex]
        sims += [e for _, e in sx]
        top = max(ex, key=lambda x: x[1]) if ex else None
        stop = max(sx, key=lambda x: x[1]) if sx else ("-", float("nan"))
        print(f"  {name}{' (op taps)' if op else ''}: {len(ex)} rows; local excess "
              f"{min(e for _, e, _ in ex):.4f}..{top[1]:.4f} (max at {top[0]}); sim excess up to "
              f"{stop[1]:.4f} (at {stop[0]}; {len(sx)} rows, {len(notes)} not simulated); beyond: "
              f"{v.beyond_expected or 'none'}")
        out[name + ("-op" if op else "")] = {"rows": len(ex), "excess": [e for _, e, _ in ex],
                                            "sim_excess": dict(sx), "beyond": v.beyond_expected,
                                            "not_simulated": notes}
    n, m = len(excess), len(sims)
    print(f"calibration: {n} rows of {len(CALIBRATION) + 1} clean builds; local excess "
          f"{min(excess):.4f}..{max(excess):.4f}; sim excess {min(sims):.4f}..{max(sims):.4f} ({m} rows)")
    for f in factors:
        k = sum(e > f for e in excess)
        print(f"  excess factor {f:g}: {k}/{n} rows flagged ({100 * k / n:.1f} % false alarms)")
    for f in sim_factors:
        k = sum(e > f for e in sims)
        print(f"  sim factor {f:g}: {k}/{m} rows flagged ({100 * k / max(m, 1):.1f} % false alarms)")
    return {"rows": n, "sim_rows": m, "models": out}


def cost(root: Path, repeat: int, blocks: int) -> dict:
    """verify --local against verify --expected int8 of the same build, alternating, best of
    ``repeat``: in this process with the rounded model's graph and session cached from the previous
    call (a notebook verifying again), in this process with that cache emptied before each call (a
    first verify of a build), and as the CLI in fresh processes (imports included)."""
    import subprocess

    from leapp_lab.steps import expected_int8
    from leapp_lab.steps.compile import compile
    from leapp_lab.steps.verify import verify

    d = root / "mobilenet_blocks"
    if not (d / "model.onnx").is_file():
        d = prepare_model("mobilenet_blocks", root, env={"LEAPP_LAB_MBV2_BLOCKS": str(blocks)})
    b = compile(d / "model.onnx", "ort-int8", out=d / "cost.ort-int8", naive_check=False)
    ref = d / "model.reference.npz"

    def timed(cold=False, **kw):
        if cold:
            expected_int8._CACHE.clear()
        t = time.perf_counter()
        verify(ref, b.path, out=root / "runs", **kw)
        return time.perf_counter() - t

    def cli(*flags):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "leapp_lab.cli", "verify", str(ref), str(b.path), "--no-save",
                        *flags], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        return time.perf_counter() - t
    timed(local=True)
    timed(expected="int8")          # imports, page cache
    res = {}
    for label, a, e in (("warm (graph and session cached)", lambda: timed(local=True), lambda: timed(expected="int8")),
                        ("cold (cache emptied)", lambda: timed(local=True), lambda: timed(cold=True, expected="int8")),
                        ("CLI, fresh processes", lambda: cli("--local"), lambda: cli("--expected", "int8"))):
        local, exp = [], []
        for i in range(repeat):
            local.append(a())
            exp.append(e())
        lo, ex = min(local), min(exp)
        print(f"  {label}: verify --local {lo:.3f}s, verify --expected int8 {ex:.3f}s (best of {repeat}); "
              f"ratio {ex / lo:.2f}x (target <= 2x); medians {sorted(local)[repeat // 2]:.3f}s / "
              f"{sorted(exp)[repeat // 2]:.3f}s")
        res[label] = {"local_s": local, "expected_s": exp, "ratio": ex / lo}
    return res


REPAIRS = (("outlier_mlp", 0.01), ("conv_net", 0.003), ("mobilenet_blocks", 0.1))


def repair_ranks(root: Path, blocks: int) -> dict:
    """``repair --rank output`` against ``--rank excess`` on clean int8 builds (builds, kept segments,
    the error reached)."""
    import leapp_lab

    out = {}
    for name, target in REPAIRS:
        d = root / name
        if not (d / "model.onnx").is_file():
            d = prepare_model(name, root, env={"LEAPP_LAB_MBV2_BLOCKS": str(blocks)})
        for rank in ("output", "excess"):
            t = time.perf_counter()
            r = leapp_lab.repair(d / "model.reference.npz", d / "model.onnx", engine="ort-int8",
                                 target_nrmse=target, jobs=1, rank=rank, out=root / f"repair-{name}")
            s = time.perf_counter() - t
            print(f"  {name} (target {target:g}) --rank {rank}: {r.status}, {r.builds} builds, {s:.1f}s, kept "
                  f"{len(r.chosen)} of {len(r.segments)} {r.chosen}; output nrmse {r.before:.4g} -> "
                  f"{(r.after if r.after is not None else float('nan')):.4g}")
            out[f"{name}/{rank}"] = {"status": r.status, "builds": r.builds, "seconds": s, "chosen": r.chosen,
                                     "before": r.before, "after": r.after}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("all", "study", "calibrate", "cost", "repair"), default="all")
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--blocks", type=int, default=14, help="the conv net's blocks")
    ap.add_argument("--layers", type=int, default=8, help="the ViT's encoder layers")
    ap.add_argument("--magnitude", type=float, default=1.0, help="scale the study's faults (0.3: 0.3..1.5 %%)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", help="where to write models and builds (default: a temp folder, removed after)")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="leapp-lab-bench-int8-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}")
    res = {}
    try:
        if args.part in ("all", "study"):
            res["study"] = study(root, args.trials, args.blocks, magnitude=args.magnitude)
            res["study_vit"] = study(root, args.trials, args.layers, "vit_blocks", args.magnitude)
        if args.part in ("all", "calibrate"):
            res["calibrate"] = calibrate(root)
        if args.part in ("all", "cost"):
            res["cost"] = cost(root, args.repeat, args.blocks)
        if args.part in ("all", "repair"):
            res["repair"] = repair_ranks(root, args.blocks)
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1, default=float))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
