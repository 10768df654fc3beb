"""Benchmark: ``verify --local`` against a plain ``verify`` of the same build.

Local error cuts the engine graph at every tap and runs it once per sample (not once per tap), then
scores each row's local value like the cumulative one. This script prepares a random-initialised
ResNet-18-like conv net (a tap after the stem and after every residual block) or, with ``--model
transformer``, a 6-layer transformer encoder (a tap after every sublayer); ``--op-taps`` taps every
intermediate value too. It compiles it (``ort`` and ``ort-int8`` by default), and times, for
each build, alternating on the same warm files, a plain verify and a verify with ``local=True``
(both save their run folder, as the CLI does). It prints the best time of each and the ratio
local / plain (target <= 1.5).

    .venv/bin/python bench/bench_local.py                       # 64x64 images, 8 samples
    .venv/bin/python bench/bench_local.py --model transformer --op-taps
    .venv/bin/python bench/bench_local.py --size 32 --samples 2 --repeat 1   # a quick run
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


def make_model(width: int = 64):
    import torch
    from torch import nn

    from leapp_lab import tap

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(y)) + self.down(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU())
            self.pool = nn.MaxPool2d(3, 2, 1)
            chans, blocks, cin = (w, 2 * w, 4 * w, 8 * w), [], w
            for i, c in enumerate(chans):
                blocks += [Block(cin, c, 1 if i == 0 else 2), Block(c, c, 1)]
                cin = c
            self.blocks = nn.ModuleList(blocks)
            self.fc = nn.Linear(8 * w, 10)

        def forward(self, x):
            x = tap(self.stem(x), "stem")
            x = self.pool(x)
            for i, b in enumerate(self.blocks):
                x = tap(b(x), f"block{i}")
            return self.fc(tap(x.mean(dim=(2, 3)), "pooled"))

    torch.manual_seed(0)
    return Net().eval()


def make_transformer(d: int = 128, layers: int = 6, heads: int = 4):
    """A pre-norm transformer encoder written out op by op (attention, softmax, LayerNorm, GELU MLP),
    a tap after every attention and MLP sublayer: many taps, little arithmetic per tapped value."""
    import torch
    from torch import nn

    from leapp_lab import tap

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, i):
            t, hd = x.shape[1], d // heads
            q, k, v = self.qkv(self.n1(x)).reshape(1, t, 3, heads, hd).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / hd ** 0.5, dim=-1) @ v
            x = tap(x + self.proj(a.transpose(1, 2).reshape(1, t, d)), f"attn{i}")
            return tap(x + self.fc2(torch.nn.functional.gelu(self.fc1(self.n2(x)))), f"mlp{i}")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = layer(x, i)
            return self.head(x.mean(dim=1))

    torch.manual_seed(0)
    return Net().eval()


def prepare(root: Path, model: str, size: int, samples: int, op_taps: bool, width: int) -> Path:
    import torch

    import leapp_lab

    g = torch.Generator().manual_seed(1)
    if model == "transformer":
        net, xs = make_transformer(), [(torch.randn(1, size, 128, generator=g),) for _ in range(samples)]
    else:
        net, xs = make_model(width), [(torch.randn(1, 3, size, size, generator=g),) for _ in range(samples)]
    leapp_lab.prepare({"model": net, "samples": xs}, root / "model.onnx", root / "model.npz",
                      root / "model.reference.npz", debug_taps=["all"], op_taps=op_taps)
    return root / "model.onnx"


def timed(ref: Path, build: Path, out: Path, local: bool):
    from leapp_lab.steps.verify import verify

    t = time.perf_counter()
    rep = verify(ref, build, out=out, local=local)
    return time.perf_counter() - t, rep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("resnet", "transformer"), default="resnet",
                    help="resnet: ResNet-18-like conv net; transformer: 6-layer encoder, d=128")
    ap.add_argument("--size", type=int, default=64,
                    help="resnet: image height and width; transformer: sequence length (default 64)")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--width", type=int, default=64, help="channels of the first stage (default 64, ResNet-18's)")
    ap.add_argument("--engines", default="ort,ort-int8")
    ap.add_argument("--op-taps", action="store_true", help="tap every intermediate value too")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where to write the model and builds (default: a temp folder, removed after)")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="leapp-lab-bench-local-"))
    root.mkdir(parents=True, exist_ok=True)
    from leapp_lab.steps.compile import compile

    try:
        t = time.perf_counter()
        onnx_path = prepare(root, args.model, args.size, args.samples, args.op_taps, args.width)
        what = (f"6-layer transformer encoder, d=128, 1x{args.size}x128" if args.model == "transformer" else
                f"ResNet-18-like (width {args.width}), 1x3x{args.size}x{args.size}")
        print(f"model: {what}, {args.samples} samples, "
              f"{'manual + op' if args.op_taps else 'manual'} taps (prepared in {time.perf_counter() - t:.1f}s); "
              f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
              f"{time.strftime('%Y-%m-%d')}")
        results = {}
        for engine in args.engines.split(","):
            built = compile(onnx_path, engine, naive_check=False)
            build = built.path
            ref = root / "model.reference.npz"
            plain, local = [], []
            rep = None
            timed(ref, build, root / "warm", False)        # imports, page cache
            for i in range(args.repeat):
                plain.append(timed(ref, build, root / "plain", False)[0])
                tl, rep = timed(ref, build, root / "local", True)
                local.append(tl)
                print(f"  {engine} round {i + 1}: verify {plain[-1]:.3f}s   verify --local {tl:.3f}s   "
                      f"ratio {tl / plain[-1]:.2f}")
            rows = [r for r in rep.rows if r.status == "compared"]
            assert rows and all(r.local_nrmse is not None for r in rows), "every compared row has a local value"
            p, l = min(plain), min(local)
            run_s = built.timings_s["run"]
            print(f"{engine}: {len(rows)} rows; verify {p:.3f}s, verify --local {l:.3f}s, "
                  f"ratio {l / p:.2f}x (target <= 1.5x); compile's own run of the {args.samples} samples "
                  f"{run_s:.3f}s; largest local error: {rep.worst_local}")
            results[engine] = {"rows": len(rows), "plain_s": plain, "local_s": local, "ratio": l / p,
                               "compile_run_s": run_s}
        if args.json:
            Path(args.json).write_text(json.dumps({"size": args.size, "samples": args.samples,
                                                   "op_taps": args.op_taps, "engines": results}, indent=1))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
