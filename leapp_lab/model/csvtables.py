"""The flat CSV tables beside a report.json (``metrics.csv``, ``per_sample.csv``, a compare's
table): pandas-free, through the csv module; empty cells for None and non-finite values.
"""
from __future__ import annotations

from typing import Any

from .columns import SAMPLE_ID_KEYS, sample_columns


def csv_text(keys: list[str], records: list[dict[str, Any]]) -> str:
    """The flat tables beside report.json (pandas-free: csv module); empty cells for None and
    non-finite values."""
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(keys)
    # the csv module writes None as an empty cell, str/int as they are and a float as its repr:
    # only non-finite floats, numpy scalars and lists need a look (a per-sample table has ~20 k cells)
    plain = (str, int, bool, type(None))
    for rec in records:
        row = [rec[k] for k in keys]
        for i, v in enumerate(row):
            t = type(v)
            if t is float:
                if not -_INF < v < _INF:
                    row[i] = None
            elif t not in plain:
                row[i] = _csv(v)
        w.writerow(row)
    return buf.getvalue()


_INF = float("inf")


def per_sample_csv(rows: list) -> str:
    """per_sample.csv: ``csv_text`` of ``sample_records`` (the same text), without a dict per
    record: each row's identity cells are quoted once, its samples' cells (numbers) joined
    directly (1,024 records: 17 -> 8 ms here)."""
    import csv
    import io
    keys = [c.key for c in sample_columns()]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="")
    w.writerow([*SAMPLE_ID_KEYS, *keys])
    out = [buf.getvalue()]
    for r in rows:
        buf.seek(0)
        buf.truncate()
        w.writerow([r.name, r.kind, r.order])
        prefix = buf.getvalue() + ","
        for sm in r.samples:
            cells = [str(sm.sample)]
            for k in keys:
                v = getattr(sm, k)
                t = type(v)
                if t is float:
                    cells.append(repr(v) if -_INF < v < _INF else "")
                elif v is None:
                    cells.append("")
                elif t is int:
                    cells.append(str(v))
                else:
                    cells.append(_csv(v))
            out.append(prefix + ",".join(cells))
    return "\n".join(out) + "\n"


def _csv(v: Any) -> str:
    """A cell the csv module would not write right by itself (``csv_text``)."""
    if isinstance(v, float):      # numpy's float64 (its repr would say np.float64(...))
        return repr(float(v)) if -_INF < v < _INF else ""
    if isinstance(v, list):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)
