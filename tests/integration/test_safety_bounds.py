"""The size bounds of docs/safety.md: decompression bombs in a ``.tgz`` build and in compressed npz
members are refused, naming the archive and member, before they are inflated onto disk or into
memory; and the paths ``leapp_lab.load`` cannot use raise ``UnusableInput`` saying what they are.

The bombs are real: 1 GiB of zeros deflated to about 1 MB, written into a real compiled build, a
real trace run (``leapp-lab demo``) and a real verify run. The deflate stream is made without
compressing 1 GiB (each 1 MiB of zeros after a full flush deflates to the same bytes), so a bomb
costs a fraction of a second. Every command runs in a subprocess; its peak memory is its own
``ru_maxrss`` (``os.wait4`` in a small launcher), and the temporary folder it extracts into is a private ``TMPDIR``
whose size is sampled while it runs.
"""
from __future__ import annotations

import io
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from safety_helpers import assert_refused, cli_many, copy_prepared, tree

GIB = 1 << 30
MIB = 1 << 20
#: docs/safety.md, size bounds: a refused bomb is refused before it is inflated, so the command
#: stays near what it needs anyway (tens of MiB), far below the 1 GiB the bomb declares
RSS_BOUND = 300 * MIB
MEM = 3 << 30            # RLIMIT_AS: the old reader (3.3 GB) fails the test, not the machine
REF = "build/model.reference.npz"


# -- bombs -------------------------------------------------------------------------------------

def _zeros_deflated(head: bytes, zeros: int, tail: bytes = b"") -> tuple[bytes, int]:
    """A raw deflate stream of ``head + zeros * b"\\0" + tail`` and its CRC-32, made in well under a
    second: after a full flush the compressor starts afresh, so every MiB of zeros deflates to the
    same bytes."""
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    mib = bytes(MIB)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    seg = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    n, rest = divmod(zeros, MIB)
    last = c.compress(bytes(rest) + tail) + c.flush()
    crc = zlib.crc32(head)
    for _ in range(n):
        crc = zlib.crc32(mib, crc)
    crc = zlib.crc32(bytes(rest) + tail, crc)
    return first + seg * n + last, crc & 0xFFFFFFFF


def _npy_head(shape: str, descr: str = "<f4") -> bytes:
    hdr = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)).ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode()


def _write_zip(path: Path, members: list[tuple[str, int, bytes, int, int]]) -> None:
    """A zip of ``(name, method, raw bytes, crc, uncompressed size)`` members, written by hand (zipfile
    cannot store a stream it did not deflate itself)."""
    out, central = io.BytesIO(), []
    for name, method, raw, crc, usize in members:
        off = out.tell()
        n = name.encode()
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(raw), usize,
                              len(n), 0) + n + raw)
        central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc,
                                   len(raw), usize, len(n), 0, 0, 0, 0, 0, off) + n)
    cd = out.tell()
    for c in central:
        out.write(c)
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(central), len(central), out.tell() - cd, cd, 0))
    path.write_bytes(out.getvalue())


def _stored(npz: Path, skip: str | None = None) -> list:
    with zipfile.ZipFile(npz) as z:
        return [(i.filename, zipfile.ZIP_STORED, z.read(i), i.CRC, i.file_size) for i in z.infolist()
                if i.filename != skip]


def _bomb_member(name: str, nbytes: int = GIB, declared: int | None = None) -> tuple:
    """A deflated float32 member of ``nbytes`` zeros; ``declared``: the data bytes its header and the
    zip directory claim instead (with the CRC of what they claim, so only the length betrays it)."""
    claim = nbytes if declared is None else declared
    head = _npy_head(f"({claim // 4},)")
    raw, crc = _zeros_deflated(head, nbytes)
    if declared is not None:
        crc = zlib.crc32(head + bytes(declared)) & 0xFFFFFFFF
    return (name, zipfile.ZIP_DEFLATED, raw, crc, len(head) + claim)


def _bomb_tgz(src: Path, dst: Path, member: str, nbytes: int = GIB) -> None:
    """``src`` (a compiled .tgz build) with one more member of ``nbytes`` zeros, gzip made by hand."""
    buf = io.BytesIO()
    with tarfile.open(src) as tf:
        out = tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT)
        for m in tf.getmembers():
            out.addfile(m, tf.extractfile(m))
        prefix = buf.getvalue()            # before close(): no end-of-archive blocks yet
    ti = tarfile.TarInfo(member)
    ti.size, ti.mtime = nbytes, int(time.time())
    head = prefix + ti.tobuf(format=tarfile.PAX_FORMAT)
    end = 2 * 512 + (-(len(head) + nbytes + 1024)) % tarfile.RECORDSIZE
    raw, crc = _zeros_deflated(head, nbytes + end)
    size = (len(head) + nbytes + end) & 0xFFFFFFFF
    dst.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + raw + struct.pack("<II", crc, size))


# -- subprocesses, measured ----------------------------------------------------------------------

#: runs argv[2:] as its own child and writes that child's peak RSS (bytes) to argv[1]
_LAUNCH = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def _measured(argv: list, cwd: Path, env: dict | None = None, watch: Path | None = None,
              timeout: float = 120) -> tuple[subprocess.CompletedProcess, int, int]:
    """Run ``argv`` (RLIMIT_AS ``MEM``); returns the result, its own peak RSS in bytes and the largest
    size (bytes on disk) ``watch`` reached while it ran, sampled every few milliseconds."""
    e = dict(os.environ)
    e.pop("LEAPP_LAB_DEBUG", None)
    e.update(env or {})
    peak_disk = [0]
    with open(cwd / ".out", "w+b") as fo, open(cwd / ".err", "w+b") as fe:
        # started by a small launcher: a child forked from this (large) test process starts with its
        # resident pages, and Linux keeps that high-water mark across exec
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, str(cwd / ".rss"), *map(str, argv)],
                                cwd=cwd, env=e, stdout=fo, stderr=fe, start_new_session=True,
                                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM)))
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak_disk[0] = max(peak_disk[0], _disk(watch))
                time.sleep(0.003)
        t = threading.Thread(target=sample, daemon=True)
        if watch is not None:
            t.start()
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)
                raise AssertionError(f"{argv} ran past {timeout} s")
            time.sleep(0.005)
        proc.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        if watch is not None:
            t.join()
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(), fe.read().decode()
    (cwd / ".out").unlink()
    (cwd / ".err").unlink()
    rss = int((cwd / ".rss").read_text())
    (cwd / ".rss").unlink()
    r = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    return r, rss, peak_disk[0]


def _disk(folder: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
    return total


_LOAD = """
import sys
import leapp_lab
from leapp_lab.model.errors import UnusableInput
try:
    r = leapp_lab.load(sys.argv[1])
    if r.kind == "trace":
        r.arrays()
except UnusableInput as exc:
    print(f"UnusableInput: {exc}", file=sys.stderr)
    sys.exit(2)
except BaseException as exc:
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(1)
"""


def _cli(*args) -> list:
    return [sys.executable, "-m", "leapp_lab.cli", *args]


def _api_load(path) -> list:
    return [sys.executable, "-c", _LOAD, str(path)]


# -- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The prepared model with its ort build also as a .tgz, a verify run and a trace run (demo)."""
    w = copy_prepared(tmp_path_factory, tmp_path_factory.mktemp("safety_bounds") / "w")
    d = w["dir"]
    for r in cli_many([["compile", "build/model.onnx", "--archive", "--quiet"],
                       ["verify", REF, "build/model.ort", "--out", "vruns"],
                       ["verify", REF, "build/model.ort", "--out", "vruns2"],
                       ["demo", "--out", "demo", "--samples", "2"]], cwd=d, timeout=600):
        assert r.returncode == 0, (r.args, r.stderr[-2000:])
    return d


@pytest.fixture
def w(base, tmp_path):
    d = tmp_path / "w"
    shutil.copytree(base, d, symlinks=True)
    return d


def _one_run(root: Path) -> Path:
    return next(p for p in (root / "runs").iterdir() if not p.name.startswith("."))


# -- .tgz builds ---------------------------------------------------------------------------------

def test_compile_records_the_size_of_every_file_of_the_build(w):
    d = json.loads((w / "build/model.ort/build.json").read_text())
    # every file but the two records about the files: build.json and the reuse key's cache.json
    on_disk = {p.name: p.stat().st_size for p in (w / "build/model.ort").iterdir()
               if p.name not in ("build.json", "cache.json")}
    assert d["files"] == on_disk
    with tarfile.open(w / "build/model.ort.tgz") as tf:
        held = {m.name: m.size for m in tf.getmembers() if m.name != "build.json"}
        body = json.loads(tf.extractfile("build.json").read())
    assert body["files"] == held


def test_a_tgz_build_with_a_1gib_zero_member_is_refused_before_anything_is_extracted(w, tmp_path):
    bomb = w / "bomb.ort.tgz"
    _bomb_tgz(w / "build/model.ort.tgz", bomb, "zz-zeros.bin")
    assert bomb.stat().st_size < 2 * MIB
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    before = tree(w)
    r, rss, disk = _measured(_cli("verify", REF, bomb.name, "--no-save"), w, env={"TMPDIR": str(tmpdir)},
                             watch=tmpdir)
    line = assert_refused(r, "bomb.ort.tgz:zz-zeros.bin", "not a file of this build")
    assert "leapp-lab-build-" not in line, line
    assert disk < 4 * MIB, f"TMPDIR grew to {disk >> 20} MiB while verify read the archive"
    assert list(tmpdir.glob("leapp-lab-build-*")) == []
    assert rss < RSS_BOUND * 2, rss           # verify imports onnxruntime: a little more than report
    assert tree(w) == before


def _retar(src: Path, dst: Path, edit=None, extra: list[tuple[tarfile.TarInfo, bytes]] = ()) -> None:
    with tarfile.open(src) as tf, tarfile.open(dst, "w:gz") as out:
        for m in tf.getmembers():
            data = tf.extractfile(m).read()
            if edit is not None:
                data = edit(m.name, data)
                m.size = len(data)
            out.addfile(m, io.BytesIO(data))
        for ti, data in extra:
            out.addfile(ti, io.BytesIO(data) if data else None)


def _info(name: str, type_=tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type, ti.size, ti.linkname = type_, size, link
    return ti


def test_a_tgz_build_extracts_only_its_own_files_and_names_members_in_errors(w, tmp_path):
    tgz = w / "build/model.ort.tgz"

    def legacy(name, data):           # a build.json from before it recorded its files
        if name != "build.json":
            return data
        d = json.loads(data)
        d.pop("files", None)
        return json.dumps(d).encode()

    def cut_npz(name, data):          # sample_outputs.npz cut short, of its recorded size
        return data[: len(data) // 2] + bytes(len(data) - len(data) // 2) if name == "sample_outputs.npz" else data

    def bad_json(name, data):
        return b"{not json" if name == "build.json" else data

    cases = {
        "link": dict(extra=[(_info("notes", tarfile.SYMTYPE, link="/etc/passwd"), b"")]),
        "abs": dict(extra=[(_info("/tmp/evil.txt", size=4), b"evil")]),
        "dotdot": dict(extra=[(_info("../evil.txt", size=4), b"evil")]),
        "sub": dict(extra=[(_info("sub/evil.txt", size=4), b"evil")]),
        "fifo": dict(extra=[(_info("pipe", tarfile.FIFOTYPE), b"")]),
        "extra": dict(extra=[(_info("extra.bin", size=4), b"junk")]),
        "grown": dict(edit=lambda n, d: d + b"\n" * 10 if n == "compile.log" else d),
        "legacy-extra": dict(edit=legacy, extra=[(_info("extra.bin", size=4), b"junk")]),
        "cut": dict(edit=cut_npz),
        "badjson": dict(edit=bad_json),
        # compile's reuse record is allowed beside the build, never extracted, and bounded
        "bigcache": dict(extra=[(_info("cache.json", size=(64 << 20) + 1), bytes((64 << 20) + 1))]),
    }
    names = {"link": "notes", "abs": "/tmp/evil.txt", "dotdot": "../evil.txt", "sub": "sub/evil.txt",
             "fifo": "pipe", "extra": "extra.bin", "grown": "compile.log", "legacy-extra": "extra.bin",
             "cut": "sample_outputs.npz", "badjson": "build.json", "bigcache": "cache.json"}
    for k, kw in cases.items():
        _retar(tgz, w / f"{k}.ort.tgz", **kw)
    _retar(tgz, w / "legacy.ort.tgz", edit=legacy)
    # `tar czf` of the whole build folder takes compile's cache.json along: it still verifies
    record = (w / "build/model.ort/cache.json").read_bytes()
    _retar(tgz, w / "folder.ort.tgz", extra=[(_info("cache.json", size=len(record)), record)])
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    before = tree(w)
    env = {"TMPDIR": str(tmpdir)}
    results = cli_many([["verify", REF, f"{k}.ort.tgz", "--no-save"] for k in cases]
                       + [["verify", REF, "legacy.ort.tgz", "--no-save"]]
                       + [["verify", REF, "folder.ort.tgz", "--no-save"]], cwd=w, env=env, mem=MEM)
    folder = results.pop()
    assert folder.returncode == 0, folder.stderr         # with the reuse record beside the build
    for k, r in zip(cases, results):
        line = assert_refused(r, f"{k}.ort.tgz:{names[k]}")
        assert "leapp-lab-build-" not in line and str(tmpdir) not in line, line
    assert results[-1].returncode == 0, results[-1].stderr     # an older build still verifies
    assert tree(w) == before
    assert list(tmpdir.glob("leapp-lab-build-*")) == [] and not (tmp_path / "evil.txt").exists()


# -- compressed npz members ----------------------------------------------------------------------

def test_a_1gib_member_deflated_in_a_trace_run_is_refused_by_load_and_report_in_bounded_memory(w):
    run = _one_run(w / "demo/frozen_constant/leapp_lab")
    arrays = run / "arrays.npz"
    _write_zip(arrays, _stored(arrays) + [_bomb_member("zz/bomb/0/input.npy")])
    assert arrays.stat().st_size < 2 * MIB
    for argv in (_api_load(run), _cli("report", run, "-o", w / "r.html")):
        r, rss, _ = _measured(argv, w)
        line = assert_refused(r, "arrays.npz", "zz/bomb/0/input")
        assert "MiB" in line and "inflate" in line, line
        assert rss < RSS_BOUND, (argv[-1], rss >> 20)
    assert not (w / "r.html").exists()


def test_a_1gib_member_deflated_in_a_verify_run_is_refused_by_load_report_and_diff_in_bounded_memory(w):
    run, other = _one_run(w / "vruns"), _one_run(w / "vruns2")
    hist = run / "histograms.npz"
    _write_zip(hist, _stored(hist) + [_bomb_member("zz-bomb.npy")])
    for argv in (_api_load(run), _cli("report", run, "-o", w / "r.html"), _cli("diff", other, run)):
        r, rss, _ = _measured(argv, w)
        assert_refused(r, "histograms.npz", "zz-bomb")
        assert rss < RSS_BOUND, (argv[2:], rss >> 20)


def test_verify_refuses_a_reference_member_over_the_bound_or_longer_than_it_declares(w):
    ref = w / REF
    with zipfile.ZipFile(ref) as z, zipfile.ZipFile(w / "build/model.ort/sample_outputs.npz") as s:
        name = next(n for n in z.namelist() if n in s.namelist())
        body = z.read(name)            # the real array: header and data, as prepare stored it
    # the real array, then 64 MiB more in the stream that the zip directory (size, CRC) hides
    raw, _ = _zeros_deflated(body, 64 * MIB)
    liar = (name, zipfile.ZIP_DEFLATED, raw, zlib.crc32(body) & 0xFFFFFFFF, len(body))
    _write_zip(w / "liar.reference.npz", _stored(ref, skip=name) + [liar])
    n = GIB // 12 * 12                  # 1 GiB of the member's own sample count: past every header check
    head = _npy_head(f"(3, {n // 12})")
    raw, crc = _zeros_deflated(head, n)
    _write_zip(w / "bomb.reference.npz", _stored(ref, skip=name) + [(name, zipfile.ZIP_DEFLATED, raw, crc,
                                                                     len(head) + n)])
    before = tree(w)
    for f, why in (("liar.reference.npz", "inflates to more than"), ("bomb.reference.npz", "MiB inflated")):
        r, rss, _ = _measured(_cli("verify", f, "build/model.ort", "--no-save"), w)
        assert why in assert_refused(r, f, f"array {name[:-4]!r}")
        assert rss < RSS_BOUND * 2, (f, rss >> 20)
    assert tree(w) == before


def test_a_member_that_inflates_past_its_declared_size_is_refused(tmp_path):
    import numpy as np

    from leapp_lab.compare.npzio import NpzArrays
    from leapp_lab.model.errors import UnusableInput
    from leapp_lab.model.jsonio import load_npz
    liar = tmp_path / "liar.npz"
    _write_zip(liar, [_bomb_member("x.npy", nbytes=64 * MIB, declared=16)])
    with pytest.raises(UnusableInput, match=r"liar\.npz: array 'x' inflates to more than the \d+ bytes"):
        load_npz(liar)
    with pytest.raises(UnusableInput, match=r"liar\.npz: array 'x' inflates to more than the \d+ bytes"):
        NpzArrays(liar)["x"]
    # within the bound, compressed files read as numpy wrote them
    a = {"x": np.arange(12, dtype="<f4").reshape(3, 4), "f": np.asfortranarray(np.arange(35.).reshape(5, 7)),
         "e": np.zeros((0, 3)), "s": np.array(["ab", "c"]), "big": np.linspace(0, 1, 300_000)}
    np.savez_compressed(tmp_path / "c.npz", **a)
    for got in (load_npz(tmp_path / "c.npz"), NpzArrays(tmp_path / "c.npz")):
        for k, v in a.items():
            assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v), k
    assert load_npz(tmp_path / "c.npz")["f"].flags.f_contiguous


# -- load(): UnusableInput for every unusable path ------------------------------------------------

def test_load_raises_unusable_input_for_a_fifo_a_device_and_a_tgz_build(w):
    from leapp_lab import load
    from leapp_lab.model.errors import UnusableInput
    run = _one_run(w / "vruns")
    fifo_run, dev_run = w / "fifo_run", w / "dev_run"
    shutil.copytree(run, fifo_run)
    shutil.copytree(run, dev_run)
    (fifo_run / "report.json").unlink()
    os.mkfifo(fifo_run / "report.json")
    (dev_run / "report.json").unlink()
    (dev_run / "report.json").symlink_to("/dev/zero")
    hist_fifo = w / "hist_fifo"
    shutil.copytree(run, hist_fifo)
    (hist_fifo / "histograms.npz").unlink()
    os.mkfifo(hist_fifo / "histograms.npz")
    os.mkfifo(w / "pipe")
    fifo_latest = w / "fifo_latest"             # a runs folder whose 'latest' is a FIFO
    (fifo_latest / "runs").mkdir(parents=True)
    (fifo_latest / "latest").symlink_to(w / "pipe")
    cases = [(w / "pipe", "FIFO"), ("/dev/zero", "character device"), (fifo_latest, "FIFO"),
             (fifo_run, "FIFO"), (dev_run, "character device"), (hist_fifo, "FIFO"),
             (w / "build/model.ort.tgz", "build archive"), (w / REF, "not a run folder"),
             (w / "nosuch", "no such file")]
    for path, what in cases:
        with pytest.raises(UnusableInput, match=what) as got:
            load(path)
        assert str(path) in str(got.value) or f"{path}/" in str(got.value), got.value
    with pytest.raises(FileNotFoundError):      # what callers caught before still catches it
        load(w / "nosuch")
    results = cli_many([["report", fifo_run], ["report", "build/model.ort.tgz"], ["diff", hist_fifo, run]],
                       cwd=w, timeout=120)
    for r, name in zip(results, ("report.json", "model.ort.tgz", "histograms.npz")):
        line = assert_refused(r, name)
        assert "no report.json here" not in line, line


# -- paths a report.json records -----------------------------------------------------------------

_REPLAY = r"""
import sys, types
import leapp_lab
from leapp_lab.model.errors import UnusableInput
from leapp_lab.steps.replay_engines import _builds
run = sys.argv[1]
g = leapp_lab.load(run).graph
assert g.run_dir == run, g.run_dir          # where replay, parity and the engines' builds write
assert g.graph_dir == str(__import__("pathlib").Path(run).parents[2]), g.graph_dir   # the folder it sits in
assert leapp_lab.load(sys.argv[2]).graph.run_dir is None       # a --json summary naming another folder
assert leapp_lab.load(sys.argv[2]).graph.graph_dir is None
assert leapp_lab.load(sys.argv[3]).graph.run_dir == run        # ... and one naming its run folder
try:
    _builds(g, "ort", types.SimpleNamespace(name="../../../escape"))
except UnusableInput as exc:
    print("refused:", exc)
"""


def test_a_trace_run_writes_its_deep_checks_where_it_is_not_where_its_report_json_says(w):
    # before: graph.run_dir came from report.json, so leapp_lab.replay(RUN) of a copied (or crafted)
    # run folder wrote replay.json / replay.npz into whatever folder the file named (shown by hand:
    # the replay wrote both into 'victim'), and a node named '../..' put its engine builds outside
    run = _one_run(w / "demo/frozen_constant/leapp_lab")
    victim = w / "victim"
    victim.mkdir()
    doc = json.loads((run / "report.json").read_text())
    doc["graphs"][0]["run_dir"] = str(victim)
    doc["graphs"][0]["graph_dir"] = str(victim)        # where a replay would load LEAPP's models from
    (run / "report.json").write_text(json.dumps(doc))
    (w / "trace.json").write_text(json.dumps(doc))                 # as run --json writes it
    doc["graphs"][0]["run_dir"] = str(run.resolve())
    (w / "good.json").write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-c", _REPLAY, str(run.resolve()), w / "trace.json", w / "good.json"],
                       capture_output=True, text=True, cwd=w, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert list(victim.iterdir()) == []
    assert "refused:" in r.stdout and "'../../../escape'" in r.stdout and "not a file name" in r.stdout
