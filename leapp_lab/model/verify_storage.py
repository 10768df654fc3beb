"""How a verify run folder stores its per-sample records beside report.json: ``samples.npz`` (the
records as float64 columns) and ``histograms.npz`` (one packed int64 array per row), read back into
``rows[i].samples`` by ``load``; and the two CSV tables. Every problem reading them names the file.
"""
from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from .columns import row_columns
from .csvtables import csv_text, per_sample_csv
from .hist import Hist
from .verify_rows import SampleMetrics


HIST_FILE = "histograms.npz"
SAMPLES_FILE = "samples.npz"
#: SampleMetrics fields that are integers (samples.npz stores every field as float64; exact below 2**53)
_INT_SAMPLE_FIELDS = ("sample", "n", "nonfinite_engine", "nonfinite_reference", "nonfinite_pairs")


def sample_record_fields() -> list[str]:
    """The SampleMetrics fields samples.npz stores (the histogram goes to histograms.npz)."""
    return [f.name for f in fields(SampleMetrics) if f.name != "hist" and not f.metadata.get("transient")]


def load_samples(report, file: Path) -> None:
    """samples.npz: ``records`` (lines x fields, float64), ``row`` (each line's index in
    ``rows``), ``fields`` (the field names); NaN or infinite metrics load as None (as JSON
    null did). Every problem names the file."""
    import math

    from .errors import UnusableInput
    from .jsonio import load_npz
    z = load_npz(file)
    try:
        recs, idx, names = z["records"], z["row"], z["fields"]
        if recs.dtype.kind != "f" or idx.dtype.kind not in "iu" or names.dtype.kind != "U":
            raise ValueError(f"dtypes {recs.dtype}, {idx.dtype}, {names.dtype}")
        names = [str(x) for x in names]
        if recs.ndim != 2 or recs.shape != (len(idx), len(names)) or idx.ndim != 1:
            raise ValueError(f"records {recs.shape}, row {idx.shape}, fields {len(names)}")
        if idx.size and (idx.min() < 0 or idx.max() >= len(report.rows)):
            raise ValueError(f"row index outside 0..{len(report.rows) - 1}")
    except (KeyError, ValueError, SystemError) as exc:   # SystemError: str() of corrupt UCS-4 text
        raise UnusableInput(f"{file}: not a samples file of this report ({exc}); verify again") from None
    known = {f.name for f in fields(SampleMetrics)}
    cols = [(k, i, k in _INT_SAMPLE_FIELDS) for i, k in enumerate(names) if k in known]
    per_row: dict[int, list] = {}
    for line, j in zip(recs.tolist(), idx.tolist()):
        kw = {}
        for k, i, is_int in cols:
            v = line[i]
            kw[k] = (int(v) if is_int else v) if math.isfinite(v) else None
        per_row.setdefault(j, []).append(SampleMetrics(**kw))
    for j, samples in per_row.items():
        report.rows[j].samples = samples


# histograms.npz: one int64 array per row, keyed by the row's name, one line per sample:
# [zero, first_bin, len, counts[0] .. counts[len-1], 0 padding to the widest sample]
_HIST_PARTS = ("zero", "first_bin", "len", "counts")    # files written before: four arrays a row


def load_sample_hists(report, file: Path) -> None:
    from .jsonio import load_npz
    arrays = load_npz(file)
    for i, row in enumerate(report.rows):
        a = arrays.get(row.name)
        if a is not None and a.ndim == 2 and a.shape[1] >= 3:
            zero, first, lens, counts = a[:, 0], a[:, 1], a[:, 2], a[:, 3:]
        else:       # four arrays a row, keyed by name, or by position (row{i}) before names
            key = row.name if f"{row.name}.zero" in arrays else f"row{i}"
            if f"{key}.zero" not in arrays:
                continue
            zero, first, lens, counts = (arrays[f"{key}.{p}"] for p in _HIST_PARTS)
        for j, sm in enumerate(row.samples):
            if j < len(zero) and sm.hist is None:
                sm.hist = Hist(int(zero[j]), int(first[j]), counts[j, :int(lens[j])].tolist())


def save_arrays(report, directory: Path) -> None:
    import numpy as np

    from .jsonio import save_npz
    names = sample_record_fields()
    lines, idx = [], []
    for j, row in enumerate(report.rows):
        for sm in row.samples:
            lines.append([getattr(sm, k) for k in names])
            idx.append(j)
    recs = np.array(lines, dtype=np.float64).reshape(len(lines), len(names))   # None -> NaN
    save_npz(directory / SAMPLES_FILE, {"records": recs, "row": np.array(idx, dtype=np.int64),
                                        "fields": np.array(names)})
    hists = {}
    for row in report.rows:
        hs = [sm.hist for sm in row.samples]
        if not hs or any(h is None for h in hs):
            continue
        width = max((len(h.counts) for h in hs), default=0)
        packed = np.zeros((len(hs), 3 + width), dtype=np.int64)
        for j, h in enumerate(hs):
            packed[j, :3] = (h.zero, h.first_bin, len(h.counts))
            packed[j, 3:3 + len(h.counts)] = h.counts
        hists[row.name] = packed
    save_npz(directory / HIST_FILE, hists)
    from .jsonio import atomic_write_text
    atomic_write_text(directory / "metrics.csv",
                      csv_text([c.key for c in row_columns()], report.row_records(verbose=True)))
    atomic_write_text(directory / "per_sample.csv", per_sample_csv(report.table(verbose=True)))
