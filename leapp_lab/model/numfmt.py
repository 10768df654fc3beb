"""The one number-formatting rule of every view and message: text, static HTML, the sentences the
trace's hazards and the deep checks write (below every leaf, so they can use it) and (in JS, the
same rules in ``extensions/src/shared/format.js`` ``fmt``) the interactive front-end. The spec both
implement is one table of cases, ``tests/data/numfmt_cases.json``, read by a Python test
(``tests/unit/test_numfmt.py``, which also feeds a vector of random values through both) and a node
test (``extensions/test/format.test.js``); a missing value is ``–`` everywhere.

Formats (a column's ``fmt``, see ``leapp_lab.model.columns``):

* ``num`` (default for floats): ``–`` for None; ``nan`` / ``inf`` / ``-inf``; integral values below
  1e15 as integers; otherwise 4 significant digits, rounded half away from zero on the exact
  binary value (what JS ``toPrecision`` does), written in fixed notation when the rounded value is
  in [1e-3, 1e4) and as ``d.ddde±XX`` otherwise (``12345.6`` → ``1.235e+04``).
* ``int``: integers as they are (other values as ``num``).
* ``cos``: 6 decimals, fixed, for |values| < 2 (a cosine, even one rounded past 1; near 1 it must show its distance from 1):
  ``0.999950``; other values as ``num``.
* ``x``: a ratio, ``num`` followed by ``x`` (``2.5x``).
* ``bool``: ``yes`` / ``no``. ``shape``: ``[1, 3, 8]``. ``text`` / ``status``: the string.

``fmt_exp(v, digits)``: a histogram's bin edges (tick labels, hover ranges), as JS ``toExponential``
writes them: ``digits`` decimals, the exponent as it is (``1.0e-3``, ``1.3e+0``; half away from zero
on the exact value, so the bin edge 1.25 is ``1.3e+0`` in the figure and the view alike).
"""
from __future__ import annotations

import math
import numbers
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

NONE = "–"
_INT_LIMIT = 1e15      # integral values below this print as integers (exact in a JS number)
# a double's exact decimal expansion has up to ~770 significant digits: compute on it without any
# intermediate rounding (the default 28-digit context would round twice)
_EXACT = Context(prec=1200, Emax=10 ** 6, Emin=-(10 ** 6))


def _round_sig(v: float, digits: int) -> tuple[str, int]:
    """(digit string of length ``digits``, decimal exponent of its first digit) of |v| rounded
    half away from zero on its exact value."""
    d = Decimal(abs(v))
    e = d.adjusted()
    step = Decimal(1).scaleb(-(digits - 1), _EXACT)
    q = d.scaleb(-e, _EXACT).quantize(step, rounding=ROUND_HALF_UP, context=_EXACT)
    if q >= 10:                           # 9.9996 -> 10.00: one more digit of exponent
        e += 1
        q = d.scaleb(-e, _EXACT).quantize(step, rounding=ROUND_HALF_UP, context=_EXACT)
    return str(q).replace(".", ""), e


def _num(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < _INT_LIMIT:
        return str(int(v))
    digits, e = _round_sig(v, 4)
    sign = "-" if v < 0 else ""
    if -3 <= e <= 3:
        if e >= 0:
            whole, frac = digits[:e + 1], digits[e + 1:]
        else:
            whole, frac = "0", "0" * (-e - 1) + digits
        frac = frac.rstrip("0")
        return sign + whole + ("." + frac if frac else "")
    return f"{sign}{digits[0]}.{digits[1:]}e{'+' if e >= 0 else '-'}{abs(e):02d}"


def _fixed(v: float, places: int) -> str:
    if not math.isfinite(v):
        return _num(v)
    q = Decimal(abs(v)).quantize(Decimal(1).scaleb(-places, _EXACT), rounding=ROUND_HALF_UP, context=_EXACT)
    s = f"{q:f}"
    return ("-" + s) if v < 0 and q != 0 else s


def fmt_exp(v: Any, digits: int = 1) -> str:
    """``v`` in exponent notation with ``digits`` decimals (module doc); ``–`` for None, ``nan`` /
    ``inf`` / ``-inf`` as ``fmt``."""
    if v is None:
        return NONE
    v = float(v)
    if not math.isfinite(v):
        return _num(v)
    if v == 0:
        return "0" + ("." + "0" * digits if digits else "") + "e+0"
    ds, e = _round_sig(v, digits + 1)
    return f"{'-' if v < 0 else ''}{ds[0]}{'.' + ds[1:] if digits else ''}e{'+' if e >= 0 else '-'}{abs(e)}"


def fmt(v: Any, kind: str = "num") -> str:
    """``v`` as text under format ``kind`` (module doc)."""
    if v is None:
        return NONE
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x, "num" if kind == "shape" else kind) for x in v) + "]"
    if not isinstance(v, (int, float)) and isinstance(v, numbers.Real):
        # a numpy scalar (a message's max |diff|, a float32): the value it holds, not its repr
        v = int(v) if isinstance(v, numbers.Integral) else float(v)
    if isinstance(v, (int, float)):
        if kind == "cos" and abs(v) < 2:
            return _fixed(float(v), 6)
        text = str(v) if isinstance(v, int) and abs(v) < _INT_LIMIT else _num(float(v))
        return text + "x" if kind == "x" else text
    return str(v)
