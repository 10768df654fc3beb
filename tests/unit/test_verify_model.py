"""The memory-mapped npz reader and the verify report model (no engines involved)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from leapp_lab.numerics.metrics import diff_stats, diff_sums
from leapp_lab.compare.npzio import NpzArrays, NpzInputError
from leapp_lab.model import load
from leapp_lab.model.hist import Hist, bin_lower_edge
from leapp_lab.model.verify import SampleMetrics, VerifyReport, VerifyRow


def test_memmapped_members_equal_np_load(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"a": rng.standard_normal((3, 5, 7)).astype(np.float32),
              "b/with/slash": np.asfortranarray(rng.standard_normal((4, 6))),
              "c": np.arange(10, dtype=np.int16), "empty": np.zeros((0, 3), np.float32),
              "flags": np.array([True, False, True]), "half": rng.standard_normal(9).astype(np.float16)}
    p = tmp_path / "x.npz"
    np.savez(p, **arrays)
    with NpzArrays(p) as z:
        assert sorted(z) == sorted(arrays)
        for k, v in arrays.items():
            got = z[k]
            assert got.dtype == v.dtype and got.shape == v.shape, k
            np.testing.assert_array_equal(got, v)
            assert z.header(k) == (v.shape, v.dtype)
        kept = z["b/with/slash"]
        assert _in_place(z["a"]) and not z["a"].flags.writeable   # read in place, not copied
    with NpzArrays(p) as z2:
        assert "a" in z2 and "nope" not in z2 and not z2._cache     # `in` reads nothing
    # closed: arrays still held keep the file's map (and their values)
    np.testing.assert_array_equal(kept, arrays["b/with/slash"])
    assert kept.flags.f_contiguous
    pc = tmp_path / "c.npz"
    np.savez_compressed(pc, **arrays)  # deflated members: read normally
    with NpzArrays(pc) as z:
        np.testing.assert_array_equal(z["a"], arrays["a"])
        assert not _in_place(z["a"])


def _in_place(a) -> bool:
    """``a`` views a memory map of the file (not a copy)."""
    import mmap
    while isinstance(a, np.ndarray):
        a = a.base
    return isinstance(a.obj if isinstance(a, memoryview) else a, mmap.mmap)


def test_headers_read_from_the_map_equal_numpys(tmp_path):
    """Stored members' headers are parsed from the map (numpy's usual layout); anything else goes
    to numpy's parser: the same shapes, dtypes and data offsets either way."""
    from leapp_lab.model.npzcheck import check_npz
    arrays = {"be": np.arange(6, dtype=">f8").reshape(2, 3), "scalar": np.array(3.5), "one": np.zeros(1),
              "u": np.array(["ab", "c"]), "rec": np.zeros(2, dtype=[("x", "<f4"), ("y", "<i2")]),
              "big": np.zeros((70_000, 2), np.uint8), "f": np.asfortranarray(np.ones((3, 2), np.int64))}
    p = tmp_path / "h.npz"
    np.savez(p, **arrays)
    want = check_npz(p)
    with NpzArrays(p) as z:
        for k, v in arrays.items():
            h = z._checked_header(k)
            w = want[k]
            assert (h.shape, h.fortran, h.dtype, h.nbytes, h.header_len) == \
                (w.shape, w.fortran, w.dtype, w.nbytes, w.header_len), k
            np.testing.assert_array_equal(z[k], v)


def test_npz_errors_name_the_file(tmp_path):
    with pytest.raises(NpzInputError, match="nope.npz: no such file"):
        NpzArrays(tmp_path / "nope.npz")
    bad = tmp_path / "text.npz"
    bad.write_text("not a zip")
    with pytest.raises(NpzInputError, match=r"text\.npz: not an \.npz file"):
        NpzArrays(bad)
    obj = tmp_path / "obj.npz"
    np.savez(obj, o=np.array([None, 1], dtype=object))
    z = NpzArrays(obj)
    with pytest.raises(NpzInputError, match=r"obj\.npz: array 'o' has dtype object"):
        z.header("o")
    with pytest.raises(NpzInputError, match="dtype object"):
        z["o"]


def _row(name, order, e, r, kind="manual"):
    st = diff_sums(e, r, rtol=1e-3)
    return VerifyRow(name=name, kind=kind, order=order, samples=[SampleMetrics(sample=0).fill(st)]).fill(st)


def test_report_round_trip_with_sample_histograms(tmp_path):
    rng = np.random.default_rng(1)
    r = rng.standard_normal(1000)
    rows = [_row("t0", 0, r + 1e-3, r), _row("output_0", 1, r * 1.1, r, kind="output")]
    rows[1].first_divergent = True
    rep = VerifyReport(reference="ref.npz", build="b", engine="ort", samples=1, rows=rows,
                       first_divergent="output_0", warnings=["w"], max_mape=1.0,
                       exceeded=["output_0"], exit_code=1)
    rep.save(tmp_path)
    doc = json.loads((tmp_path / "report.json").read_text())
    # per-sample records in samples.npz, their histograms in histograms.npz
    assert doc["kind"] == "verify" and doc["rows"][0]["samples"] == [] and doc["samples_file"] == "samples.npz"
    back = load(tmp_path)
    assert isinstance(back, VerifyReport)
    keys = [f.name for f in dataclasses.fields(SampleMetrics) if f.name not in ("hist", "sums")]
    for a, b in zip(rep.rows, back.rows):
        assert (a.name, a.mape, a.cosine, a.hist.counts) == (b.name, b.mape, b.cosine, b.hist.counts)
        assert [{k: getattr(s, k) for k in keys} for s in b.samples] == \
            [{k: getattr(s, k) for k in keys} for s in a.samples]
        assert type(b.samples[0].n) is int and type(b.samples[0].mape) is float
        assert b.samples[0].hist.counts == a.samples[0].hist.counts
        assert b.samples[0].hist.edges() == pytest.approx(a.samples[0].hist.edges())
    assert not back and back.first_divergent == "output_0"
    back.exit_code = 0
    assert back
    df = back.to_dataframe()
    assert list(df["name"]) == ["t0", "output_0"] and bool(df.loc[1, "first_divergent"])
    assert "output_0" in str(back) and ">>" in str(back)
    assert (tmp_path / "metrics.csv").read_text().count("\n") == 3


def test_histograms_file_is_two_packed_arrays_and_older_layouts_still_load(tmp_path):
    """histograms.npz holds every sample's histogram in two arrays (lines, counts), read with numpy
    in one go; the layouts earlier mains wrote (one packed member per row keyed by its name; four
    arrays a row keyed by name or by position) load to the same histograms; a packed file whose
    lines do not fit its counts is refused naming the file."""
    from leapp_lab.model.errors import UnusableInput
    from leapp_lab.model.jsonio import load_npz, save_npz
    rng = np.random.default_rng(3)
    r = rng.standard_normal((3, 400))
    def row(name, order, e):      # named like the packed layout's members: an old file's rows may be
        sams = [SampleMetrics(sample=j).fill(diff_sums(e[j], r[j], rtol=1e-3)) for j in range(3)]
        return VerifyRow(name=name, kind="manual", order=order, samples=sams).fill(diff_sums(e, r, rtol=1e-3))
    noise = rng.standard_normal((3, 400))
    rows = [row("counts", 0, r + 1e-3 * noise), row("lines", 1, r * 1.01), row("out", 2, r + noise)]
    rep = VerifyReport(reference="ref.npz", build="b", engine="ort", samples=3, rows=rows)
    rep.save(tmp_path)
    z = load_npz(tmp_path / "histograms.npz")
    assert sorted(z) == ["counts", "lines"] and z["lines"].shape == (9, 4) and z["counts"].ndim == 1
    want = [[(s.hist.zero, s.hist.first_bin, s.hist.counts) for s in row.samples] for row in rows]
    assert all(len(c) > 1 for row in want for _, _, c in row)
    got = lambda: [[(s.hist.zero, s.hist.first_bin, s.hist.counts) for s in row.samples]  # noqa: E731
                   for row in load(tmp_path).rows]
    assert got() == want
    # an earlier main: one member per row, [zero, first_bin, len, counts.., 0 padding], by row name
    per_row = {}
    for row in rows:
        width = max(len(s.hist.counts) for s in row.samples)
        a = np.zeros((len(row.samples), 3 + width), dtype=np.int64)
        for j, s in enumerate(row.samples):
            a[j, :3 + len(s.hist.counts)] = [s.hist.zero, s.hist.first_bin, len(s.hist.counts), *s.hist.counts]
        per_row[row.name] = a
    save_npz(tmp_path / "histograms.npz", per_row)
    assert got() == want
    # earlier still: four arrays a row, by name, and by position (row{i})
    for key in (lambda i, row: row.name, lambda i, row: f"row{i}"):
        four = {}
        for i, row in enumerate(rows):
            a = per_row[row.name]
            four.update({f"{key(i, row)}.zero": a[:, 0], f"{key(i, row)}.first_bin": a[:, 1],
                         f"{key(i, row)}.len": a[:, 2], f"{key(i, row)}.counts": a[:, 3:]})
        save_npz(tmp_path / "histograms.npz", four)
        assert got() == want
    lines, counts = z["lines"].copy(), z["counts"]
    lines[-1, 3] += 5
    save_npz(tmp_path / "histograms.npz", {"lines": lines, "counts": counts})
    with pytest.raises(UnusableInput, match=r"histograms\.npz: the lines declare .* counts"):
        load(tmp_path)
    lines[-1, 3] -= 5
    lines[0, 0] = 7
    save_npz(tmp_path / "histograms.npz", {"lines": lines, "counts": counts})
    with pytest.raises(UnusableInput, match=r"histograms\.npz: a histogram line names a row outside 0\.\.2"):
        load(tmp_path)


def test_hist_json_round_trip_and_edges_from_bins():
    d = np.array([0.0, 1e-3, 2.0, 5.0])
    h = diff_stats(d, np.zeros(4)).hist
    doc = h.to_dict()                       # JSON readers get the edges of the global bins too
    assert doc["edges"] == h.edges() and len(doc["edges"]) == len(h.counts) + 1
    assert Hist.from_dict(doc) == h and h.total == 4 and h.zero == 1
    # every non-zero value lies in its own bin; bin b's lower edge is the double with bits b << 50
    for v in d[d > 0]:
        i = int(np.searchsorted(h.edges(), v, side="right")) - 1
        assert h.edges()[i] <= v < h.edges()[i + 1]
        assert bin_lower_edge(h.first_bin + i) == h.edges()[i]


def test_sample_records_file_none_metrics_missing_corrupt_and_older_reports(tmp_path):
    """samples.npz keeps None metrics as None; a run folder without it still loads and says
    what is missing; a foreign one is refused naming it; a report.json of an earlier version
    (records inline, no samples_file) loads as before."""
    from leapp_lab.model.errors import UnusableInput
    r = np.linspace(-1, 1, 50)
    nan = np.full(50, np.nan)
    rows = [_row("t0", 0, r + 1e-3, r), _row("dead", 1, nan, r)]
    rep = VerifyReport(reference="ref.npz", build="b", engine="ort", samples=1, rows=rows)
    rep.save(tmp_path / "run")
    back = load(tmp_path / "run")
    dead = back.row("dead").samples[0]
    assert dead.mape is None and dead.cosine is None and dead.nonfinite_engine == 50
    assert back.row("t0").samples[0].mape == pytest.approx(rows[0].samples[0].mape, rel=0, abs=0)

    (tmp_path / "run" / "samples.npz").rename(tmp_path / "elsewhere.npz")
    gone = load(tmp_path / "run")
    assert gone.row("t0").samples == [] and any("samples.npz: missing" in w for w in gone.warnings)

    np.savez(tmp_path / "run" / "samples.npz", records=np.zeros((3, 2)), row=np.array([0, 7, 0]),
             fields=np.array(["sample", "mape"]))
    with pytest.raises(UnusableInput, match=r"samples\.npz: not a samples file of this report"):
        load(tmp_path / "run")

    doc = json.loads((tmp_path / "run" / "report.json").read_text())
    del doc["samples_file"]
    doc["rows"][0]["samples"] = [{"sample": 0, "n": 50, "mape": 1.5, "hist": None}]
    old = tmp_path / "old"
    old.mkdir()
    (old / "report.json").write_text(json.dumps(doc))
    back = load(old)
    assert back.row("t0").samples[0].mape == 1.5 and not back.warnings


def test_per_sample_csv_is_the_csv_of_the_sample_records():
    """per_sample.csv is written without a dict per record; its text is exactly the csv module's
    text of ``sample_records`` (names needing quotes, no order, None, NaN, numpy floats)."""
    from leapp_lab.model.columns import SAMPLE_ID_KEYS, sample_columns
    from leapp_lab.model.csvtables import csv_text, per_sample_csv
    r = np.linspace(-1, 1, 40)
    rows = [_row('a,"b"\nc', 0, r + 1e-3, r), _row("dead", None, np.full(40, np.nan), r), _row("z", 2, r, r)]
    rows[2].samples[0].mape = np.float64(np.nan)
    rows[2].samples[0].mse = np.float64(0.25)
    rep = VerifyReport(samples=1, rows=rows)
    want = csv_text([*SAMPLE_ID_KEYS, *(c.key for c in sample_columns())], rep.sample_records(verbose=True))
    assert per_sample_csv(rep.table(verbose=True)) == want
    assert '"a,""b""\nc"' in want and ",0.25," in want


def test_a_hand_edited_run_folder_is_refused_or_loaded_never_crashes_a_view(tmp_path):
    """Found by fuzzing a run folder: a report.json without 'kind' is bad input (exit 2, not an
    internal error); a null where a field needs a value loads as its default and the views draw;
    a samples.npz whose text is not text is refused naming it."""
    import subprocess
    import sys

    from leapp_lab.model.errors import UnusableInput
    r = np.linspace(-1, 1, 40)
    rep = VerifyReport(reference="ref.npz", build="b", engine="ort", samples=1,
                       rows=[_row("t0", 0, r + 1e-3, r), _row("output_0", 1, r * 1.1, r, kind="output")])
    rep.save(tmp_path)
    doc = json.loads((tmp_path / "report.json").read_text())
    doc["rows"][0].update(nonfinite_engine=None, status=None, order=None)
    (tmp_path / "report.json").write_text(json.dumps(doc))
    back = load(tmp_path)
    assert (back.rows[0].nonfinite_engine, back.rows[0].status) == (0, VerifyRow().status)
    assert "t0" in str(back) and "t0" in back.to_html()
    del doc["kind"]
    (tmp_path / "report.json").write_text(json.dumps(doc))
    with pytest.raises(UnusableInput, match=r"report\.json: not a leapp_lab report \(no 'kind'\)"):
        load(tmp_path)
    cli = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "report", str(tmp_path)],
                         capture_output=True, text=True)
    assert cli.returncode == 2 and "no 'kind'" in cli.stderr and "internal error" not in cli.stderr
    rep.save(tmp_path)
    z = dict(np.load(tmp_path / "samples.npz"))
    z["fields"] = np.arange(z["fields"].size, dtype=np.float64)      # names that are not text
    np.savez(tmp_path / "samples.npz", **z)
    with pytest.raises(UnusableInput, match=r"samples\.npz: not a samples file of this report"):
        load(tmp_path)


def test_text_largest_local_error_says_taps_when_an_output_adds_more():
    """``leapp-lab verify --local`` printed 'largest local error: a_out' (a tap at 0.006) beside a
    model output 'latent' at local NRMSE 0.72 (worst_local ranks taps first); the view's badge says
    '(taps)' and names the output, the text now too."""
    from viewfixtures import verify_report, with_local
    from leapp_lab.views.text_verify import _largest_local
    r = with_local(verify_report(), {"tap_a": 0.0001, "tap_b": 0.001, "output_0": 0.012})
    r.worst_local, r.first_locally_divergent = "tap_b", "output_0"
    line = _largest_local(r)
    assert line.startswith("largest local error (taps): tap_b; output_0, a model output") and "0.012" in line
    assert line in str(r)
    r.row("output_0").local_nrmse = 0.0005
    assert _largest_local(r) == "largest local error: tap_b"
