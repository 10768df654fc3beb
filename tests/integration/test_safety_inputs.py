"""Class 4 of docs/safety.md: unusable input (or an unusable output location) exits 2 with one clear
line naming it, and no traceback, in every command; ``--debug`` shows the traceback.

Every case runs the real CLI in a subprocess (with a 3 GiB address-space limit and a timeout, so an
input that is read without end fails the test instead of the machine; the cases of one kind share
one interpreter through ``cli_many``) and checks that the tree is byte-identical afterwards.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from safety_helpers import assert_refused, cli, copy_prepared, refused_many, tree

MEM = 3 << 30


@pytest.fixture
def w(tmp_path_factory, tmp_path):
    return copy_prepared(tmp_path_factory, tmp_path / "w")


def _refused(w, args, *names, **kw):
    before = tree(w["dir"])
    r = cli(*args, cwd=w["dir"], mem=MEM, timeout=60, **kw)
    line = assert_refused(r, *names)
    assert tree(w["dir"]) == before, "a refused command changed the tree"
    return line


def _many(w, cases, timeout=300, **kw):
    return refused_many(w["dir"], cases, cwd=w["dir"], mem=MEM, timeout=timeout, **kw)


# -- non-regular inputs: refused before a byte is read -------------------------------------------

@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_non_regular_input_is_refused_before_it_is_read(w, special):
    if special == "fifo":
        os.mkfifo(w["dir"] / "pipe")
        special = "pipe"
    cases = [
        ["verify", special, "build/model.ort", "--no-save"],
        ["verify", "build/model.reference.npz", special, "--no-save"],
        ["compile", special, "--npz", "build/model.npz", "--quiet", "--out", "o.ort"],
        ["compile", "build/model.onnx", "--npz", special, "--quiet", "--out", "o.ort"],
        ["report", special],
        ["prepare", special, "--onnx-out", "o/a.onnx", "--npz-out", "o/a.npz", "--reference-out",
         "o/r.npz", "--quiet"],
        ["run", special],
    ]
    for line in _many(w, [(c, (special,)) for c in cases], timeout=60):   # reading it would never end
        assert "regular file" in line or "device" in line or "FIFO" in line, line


# -- corrupt npz: headers, sizes, archives -------------------------------------------------------

def _npy(shape: str, descr: str = "<f4", data: bytes = b"") -> bytes:
    hdr = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)).ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + data


def _zip(path: Path, member: str, payload: bytes, compress=zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compress) as z:
        z.writestr(member, payload)
    return path


CORRUPT = {
    "shape-overflow": lambda p: _zip(p, "x.npy", _npy(f"(3, {2 ** 62}, 4)", data=b"\0" * 64)),
    "shape-exceeds-member": lambda p: _zip(p, "x.npy", _npy("(3, 1000000, 1000)", data=b"\0" * 64)),
    "shape-exceeds-compressed": lambda p: _zip(p, "x.npy", _npy("(3, 1000000, 1000)", data=b"\0" * 64),
                                               zipfile.ZIP_DEFLATED),
    "negative-dim": lambda p: _zip(p, "x.npy", _npy("(3, -2)", data=b"\0" * 64)),
    "truncated-data": lambda p: _zip(p, "x.npy", _npy("(3, 4)", data=b"\0" * 8)),
    "truncated-header": lambda p: _zip(p, "x.npy", b"\x93NUMPY\x01\x00\xff\x00{'descr':"),
    "garbage-header": lambda p: _zip(p, "x.npy", b"not an npy at all, not at all"),
    "code-in-header": lambda p: _zip(p, "x.npy", _npy("__import__('os').getcwd()", data=b"\0" * 64)),
    "bad-dtype": lambda p: _zip(p, "x.npy", _npy("(3, 4)", descr="zz9", data=b"\0" * 64)),
    "object-dtype": lambda p: np.savez(p, x=np.array([{"a": 1}] * 3, dtype=object)) or p,
    "foreign-member": lambda p: _zip(p, "x.txt", b"hello"),
    "empty-file": lambda p: p.write_bytes(b"") and p,
}


def test_a_corrupt_npz_is_named_in_every_command_that_reads_one(w):
    cases = []
    for kind in sorted(CORRUPT):
        bad = w["dir"] / f"bad-{kind}.npz"
        CORRUPT[kind](bad)
        assert bad.exists(), kind
        b2 = w["dir"] / f"b-{kind}.ort"
        shutil.copytree(w["build"], b2)
        shutil.copy(bad, b2 / "sample_outputs.npz")
        cases += [(["verify", bad.name, "build/model.ort", "--no-save"], (bad.name,)),
                  (["compile", "build/model.onnx", "--npz", bad.name, "--quiet", "--out", "o.ort"], (bad.name,)),
                  (["verify", "build/model.reference.npz", b2.name, "--no-save"], (b2.name, "sample_outputs.npz"))]
    _many(w, cases)


def test_a_truncated_npz_and_a_truncated_or_foreign_build_archive_are_named(w, tmp_path):
    ref = w["reference"].read_bytes()
    (w["dir"] / "half.npz").write_bytes(ref[: len(ref) // 2])
    _refused(w, ["verify", "half.npz", "build/model.ort", "--no-save"], "half.npz")
    tgz = w["dir"] / "b.ort.tgz"
    with tarfile.open(tgz, "w:gz") as tf:
        for p in sorted(w["build"].iterdir()):
            tf.add(p, arcname=p.name)
    data = tgz.read_bytes()
    (w["dir"] / "cut.ort.tgz").write_bytes(data[: len(data) * 2 // 3])
    (w["dir"] / "junk.ort.tgz").write_bytes(b"\x1f\x8b" + b"junk" * 100)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    _many(w, [(["verify", "build/model.reference.npz", n, "--no-save"], (n,))
              for n in ("cut.ort.tgz", "junk.ort.tgz")], env={"TMPDIR": str(tmpdir)})
    assert list(tmpdir.iterdir()) == [], "an extraction folder was left behind"


# -- malformed JSON reports ----------------------------------------------------------------------

_BAD_BUILD_JSON = [
    ("taps", 5), ("taps", [1]), ("observer", "x"), ("samples", "3"), ("engine", ["ort"]),
    ("model_outputs", 3), ("manifest", "x"), (None, [1, 2]), (None, "{not json"),
    # before: read from outside the build (verify --local parsed /etc/passwd as the engine graph)
    ("artifact", "/etc/passwd"), ("untapped_artifact", "../model.ort/engine.untapped.onnx"),
]


def test_a_malformed_build_json_is_named(w):
    cases = []
    good = json.loads((w["build"] / "build.json").read_text())
    for i, (field, value) in enumerate(_BAD_BUILD_JSON):
        b = w["dir"] / f"b{i}.ort"
        shutil.copytree(w["build"], b)
        if field is None:
            (b / "build.json").write_text(value if isinstance(value, str) else json.dumps(value))
        else:
            (b / "build.json").write_text(json.dumps({**good, field: value}))
        cases.append((["verify", "build/model.reference.npz", b.name, "--no-save"],
                      (f"{b.name}", "build.json") + ((repr(field),) if field else ())))
    _many(w, cases)


def test_a_malformed_run_report_is_named(w):
    r = cli("verify", "build/model.reference.npz", "build/model.ort", cwd=w["dir"])
    assert r.returncode == 0, r.stderr
    run = next((w["build_dir"] / "leapp_lab" / "runs").iterdir())
    d = json.loads((run / "report.json").read_text())
    d["rows"] = [{"name": "x", "samples": 7}]
    (run / "report.json").write_text(json.dumps(d))
    _refused(w, ["report", run.relative_to(w["dir"]), "-o", "r.html"], "report.json", "samples")


# -- MODEL.py that cannot be prepared --------------------------------------------------------------

_MODEL_HEAD = ("import torch\nfrom torch import nn\n\nclass Model(nn.Module):\n"
               "    def forward(self, x):\n        return x * 2\n\n"
               "def get_fwd_args():\n    return (torch.ones(2, 3),)\n")


_BAD_MODELS = [
    ("import sys\nsys.exit(0)\n", "sys.exit(0)"),
    ("import sys\nsys.exit(3)\n", "sys.exit(3)"),
    ("raise RuntimeError('boom at import')\n", "boom at import"),
    ("def get_samples():\n    return None\n", "get_samples() returned NoneType"),
    ("def get_samples():\n    return 5\n", "get_samples() returned int"),
    ("def get_samples():\n    return torch.ones(3, 2, 3)\n", "get_samples() returned Tensor"),
    ("def get_samples():\n    return [(1, 2, 3)]\n", "sample 0"),
    ("def get_samples():\n    return [None]\n", "NoneType"),
    ("def get_samples():\n    raise KeyError('no data')\n", "get_samples() raised KeyError"),
    ("def get_samples():\n    import sys\n    sys.exit(4)\n", "get_samples() called sys.exit(4)"),
    ("_M = Model\ndef Model():\n    raise OSError('weights missing')\n", "Model() raised OSError"),
]


def test_a_model_file_that_cannot_be_prepared_exits_2_naming_it(w):
    cases = []
    for i, (tail, says) in enumerate(_BAD_MODELS):
        f = w["dir"] / f"bad_model_{i}.py"
        f.write_text(_MODEL_HEAD + tail)
        cases.append((["prepare", f.name, "--onnx-out", f"o{i}/a.onnx", "--npz-out", f"o{i}/a.npz",
                       "--reference-out", f"o{i}/r.npz", "--quiet"], (f.name, says)))
    _many(w, cases)


# -- compile: inputs that do not fit the graph, an unreadable ONNX ------------------------------

_BAD_FEEDS = [
    ({"observation": np.zeros((2, 2, 12), np.float32)}, "has no array for model input(s) ['obs']"),
    ({"obs": np.zeros((2, 2, 13), np.float32)}, "per-sample shape (2, 13)"),
    ({"obs": np.zeros((2, 2, 12), np.float64)}, "is float64, the model expects float32"),
    ({"obs": np.zeros((2, 12), np.float32)}, "rank 1"),
    ({"obs": np.zeros((0, 2, 12), np.float32)}, "zero samples"),
]


def test_compile_names_an_input_under_a_wrong_name_shape_or_dtype_and_a_bad_onnx(w):
    cases = []
    for i, (arrays, says) in enumerate(_BAD_FEEDS):
        np.savez(w["dir"] / f"in{i}.npz", **arrays)
        cases.append((["compile", "build/model.onnx", "--npz", f"in{i}.npz", "--quiet", "--out", "o.ort"],
                      (f"in{i}.npz", says)))
    for i, content in enumerate([b"", b"\x08\x07garbage protobuf \xff\xfe" * 10]):
        (w["dir"] / f"bad{i}.onnx").write_bytes(content)
        cases.append((["compile", f"bad{i}.onnx", "--npz", "build/model.npz", "--quiet", "--out", "o.ort"],
                      (f"bad{i}.onnx",)))
    lines = _many(w, cases)
    assert not any("model.npz" in ln for ln in lines[-2:]), lines[-2:]


# -- output locations: a file where a folder is needed (or the reverse), read-only, full ----------

def test_an_output_location_of_the_wrong_kind_is_named(w):
    (w["dir"] / "afile").write_text("x")
    (w["dir"] / "adir").mkdir()
    (w["dir"] / "adir" / "keep.txt").write_text("x")
    v = ["verify", "build/model.reference.npz", "build/model.ort"]
    _many(w, [
        (v + ["--no-save", "--json", "adir"], ("adir", "folder")),
        (v + ["--out", "afile"], ("afile", "not a folder")),
        (v + ["--no-save", "--html", "afile/r.html"], ("afile",)),
        (["compile", "build/model.onnx", "--quiet", "--out", "afile/x.ort"], ("afile",)),
        (["prepare", "model.py", "--onnx-out", "afile/a.onnx", "--npz-out", "o/a.npz",
          "--reference-out", "o/r.npz", "--quiet"], ("afile",)),
        (["demo", "--out", "adir/keep.txt"], ("adir/keep.txt",)),
        (["run", "model.py", "--json", "adir"], ("adir",)),
    ])


def test_a_read_only_or_full_location_is_named(w, mounted):
    ro = mounted("ro", "ro,size=1m")
    full = mounted("full", "size=16k")
    v = ["verify", "build/model.reference.npz", "build/model.ort"]
    lines = _many(w, [
        (["compile", "build/model.onnx", "--quiet", "--out", ro / "x.ort"], (str(ro / "x.ort"), "read-only")),
        (v + ["--out", ro], (str(ro), "read-only")),
        (v + ["--no-save", "--json", ro / "v.json"], (str(ro / "v.json"), "read-only")),
        (["prepare", "model.py", "--onnx-out", ro / "a.onnx", "--npz-out", ro / "a.npz",
          "--reference-out", ro / "r.npz", "--quiet"], (str(ro), "read-only")),
        (["compile", "build/model.onnx", "--quiet", "--out", full / "x.ort"], (str(full / "x.ort"),)),
    ])
    assert "No space left" in lines[-1]
    assert list(full.iterdir()) == []


# -- --debug -------------------------------------------------------------------------------------

def test_debug_shows_the_traceback(w):
    args = ["verify", "nope.npz", "build/model.ort", "--no-save"]
    r = cli(*args, cwd=w["dir"])
    assert_refused(r, "nope.npz")
    for r in (cli(*args, cwd=w["dir"], debug=True), cli(*args, cwd=w["dir"], env={"LEAPP_LAB_DEBUG": "1"}),
              cli(args[0], "--debug", *args[1:], cwd=w["dir"])):
        assert r.returncode == 2
        assert "Traceback" in r.stderr and "nope.npz" in r.stderr.splitlines()[-1]


def test_a_compare_side_key_that_is_a_path_is_refused(w):
    # before: a compare run's side key '../../…' in report.json read the side's verify run from
    # outside the run folder (sides/<key>/), and saving the report again wrote there
    d = w["dir"]
    shutil.copytree(w["build"], d / "b2.ort")
    r = cli("verify", "build/model.reference.npz", "build/model.ort", "b2.ort", "--out", "cmp", cwd=d)
    assert r.returncode == 0, r.stderr[-2000:]
    run = d / "cmp" / "runs" / (d / "cmp" / "latest").read_text().strip()      # the compare run
    doc = json.loads((run / "report.json").read_text())
    doc["sides"][1]["key"] = "../../../b2.ort/leapp_lab/runs/x"
    (run / "report.json").write_text(json.dumps(doc))
    _refused(w, ["report", run.relative_to(d), "-o", "r.html"], "side key", "../../../b2.ort")
