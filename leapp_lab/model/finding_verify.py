"""The findings of a verify and of a compare report (``leapp_lab.model.finding``).

Verify, in the order the sentences come:

1. with an expectation (``--expected``): the rows *beyond* what that precision's rounding explains
   lead (``beyond what int8 rounding explains: …``); when none is, the finding says every row is
   within it and points to repair;
2. with local error (``--local``): the layer that adds the error, how much more than any other, and
   that the rows after it inherit it (their own share is small); when no layer adds error beyond the
   rule on its own, the divergence is rounding spread over the model, and repair is the next step;
3. otherwise the first divergent row in model order, why, and how many diverge.

Compare: what flipped, where first (model order), by how much (diff); per engine where it first
diverges (engines).
"""
from __future__ import annotations

from typing import Any

from .finding import Finding, names, num, plural, ratio

#: a layer "stands out" when its own error is this many times any other layer's
STANDS_OUT = 3.0
#: a row after the culprit inherits when its own share of its error is below this
INHERITS = 0.5
#: rows whose own error is within this factor of the largest share the blame: none is named alone
SHARED = 1.5
#: more rows than this sharing the blame is error spread over the model, not a broken layer
SPREAD = 3


#: how verify's warning about a build compiled before the last prepare begins (compare/stale.py);
#: the finding leads with it: every row of such a build compares an old engine with new references
STALE_PREFIX = "stale build:"

def _by_name(r: Any) -> dict[str, Any]:
    return {x.name: x for x in r.rows}


def _why(r: Any, row: Any) -> str:
    """The criteria a divergent row fires, with its values (``nrmse 0.034 > 0.01``)."""
    limits = r.rule.thresholds()
    out = []
    for key in (row.reason or "").split(", "):
        if key in limits:
            lim, side = limits[key]
            out.append(f"{key} {fmt_metric(key, getattr(row, key, None))} {'>' if side == 'above' else '<'} "
                       f"{fmt_metric(key, lim)}")
        elif key == "non-finite":
            out.append(f"{row.nonfinite_engine} non-finite engine values")
        elif key:
            out.append(key)
    return ", ".join(out)


def fmt_metric(key: str, v: Any) -> str:
    from .numfmt import fmt
    return fmt(v, "cos" if key == "cosine" else "num")


def _headline(ex: Any) -> str:
    """``beyond what int8 rounding explains`` (the rule's own words, ExpectedRule.headline)."""
    return ex.headline() if hasattr(ex, "headline") else f"beyond what {_within(ex)} explains"


def _within(ex: Any) -> str:
    return "int8 rounding" if ex.dtype == "int8" else f"{ex.dtype} precision"


def _expected_lead(r: Any, rows: dict[str, Any]) -> tuple[list[str], str, list[str]]:
    """(sentences, status, cited) of an expectation: its beyond rows, or that every row is within it."""
    ex = r.expected
    beyond = [n for n in r.beyond_expected if n in rows]
    judged = [x for x in r.rows if x.in_rule]
    if beyond:
        b = rows[beyond[0]]
        excess = getattr(b, "local_excess", None)
        departs = (f"the engine departs from its own int8 simulation at {b.name}: {sim_how(b, ex)}"
                   if getattr(b, "departs_sim", False) else None)
        if departs and (excess is None or excess <= ex.factor):
            # the rounding hides the fault in the excess ratio: the simulation alone shows it
            how = departs
        elif excess is not None:
            how = f"its own error is {ratio(excess)} what {_within(ex)} explains" + (f"; {departs}" if departs else "")
        elif b.expected_nrmse is not None and b.nrmse is not None:
            how = f"nrmse {num(b.nrmse)}, {ratio(b.nrmse / max(b.expected_nrmse, ex.floor))} its expected {num(b.expected_nrmse)}"
        else:
            how = f"nrmse {num(b.nrmse)}"
        more = f"; {plural(len(beyond) - 1, 'more row')} after it: {names(beyond[1:], 3)}" if len(beyond) > 1 else ""
        return ([f"{_headline(ex)[:1].upper()}{_headline(ex)[1:]}: {b.name} ({how}){more}."], "fail", beyond[:4])
    computed = [x for x in judged if x.expected_nrmse is not None or x.expected_local_nrmse is not None]
    if not computed:
        # nothing is called "within rounding" that was not measured against it
        why = next((x.expected_note for x in judged if x.expected_note), None) or "see the warnings"
        return ([f"No expected {_within(ex)} error was computed ({why.rstrip('.')}): no row is judged "
                 f"against it."], "warn", [])
    if len(computed) < len(judged):
        left = [x.name for x in judged if x not in computed]
        return ([f"No row with an expectation is {_headline(ex)} ({len(computed)} of "
                 f"{plural(len(judged), 'judged row')}); {plural(len(left), 'row')} without one "
                 f"{'is' if len(left) == 1 else 'are'} not judged against it: {names(left, 3)}."], "warn", [])
    diverged = [x.name for x in judged if x.diverged]
    sims = [x for x in judged if getattr(x, "sim_excess", None) is not None]
    none_beyond = (f"none departs from its own int8 simulation by more than {ex.sim_factor:g}× its rounding"
                   if sims and getattr(ex, "sim_factor", None) is not None else
                   f"none beyond {ex.factor:g}× its expected error")
    if diverged:
        return ([f"Every row is within what {_within(ex)} explains ({plural(len(diverged), 'row')} cross "
                 f"the rule, {none_beyond}): ordinary reduced-precision error, "
                 f"no broken layer; repair finds the segments to keep in fp32 to meet a target."], "warn", [])
    return ([f"Every row is within the rule and within what {_within(ex)} explains "
             f"({plural(len(judged), 'judged row')})."], "pass", [])


def sim_how(row: Any, ex: Any) -> str:
    """How far ``row`` departs from its int8 simulation, in words (the finding, the text)."""
    return (f"from the reference at its inputs it differs by {num(100 * row.sim_local_nrmse)} % of the "
            f"signal, {ratio(row.sim_excess)} its int8 rounding, where a clean build stays under "
            f"{ex.sim_factor:g}×")


def _local(r: Any, rows: dict[str, Any], led: bool) -> tuple[list[str], str, list[str]]:
    """(sentences, status, cited) of the local error: the layer that adds it, and who inherits it."""
    judged = [x for x in r.rows if x.in_rule]
    loc = [x for x in judged if x.local_nrmse is not None]
    if not loc:
        return ([], "pass", [])
    culprit = rows.get(r.worst_local) if r.worst_local else max(loc, key=lambda x: x.local_nrmse)
    if culprit is None or culprit.local_nrmse is None:
        return ([], "pass", [])
    if not culprit.locally_diverged and not culprit.beyond_expected:
        # worst_local ranks taps first: a model output whose own error crosses the rule (the layers
        # after the last tap) is still a layer that adds error, never "no layer"
        flagged = [x for x in loc if x.locally_diverged or x.beyond_expected]
        if flagged:
            culprit = max(flagged, key=lambda x: (getattr(x, "local_excess", None) or 0.0)
                          if r.expected is not None else x.local_nrmse)
    # with an expectation that has local values the layers compare by their excess over rounding
    # (local_excess), and a layer adds error of its own when it is beyond what rounding explains
    excess = r.expected is not None and getattr(culprit, "local_excess", None) is not None
    sim = excess and getattr(culprit, "sim_excess", None) is not None
    measure = ((lambda x: getattr(x, "sim_excess", None)) if sim else
               (lambda x: getattr(x, "local_excess", None)) if excess else (lambda x: x.local_nrmse))
    others = [measure(x) for x in loc if x is not culprit and measure(x) is not None]
    top = max(others, default=None)
    times = measure(culprit) / top if top else None
    after = [x for x in judged if (x.order or 0) > (culprit.order or 0) and x.diverged]
    inherit = [x for x in after if (not x.beyond_expected if excess else
                                    x.local_share is not None and x.local_share < INHERITS)]
    own = [x.name for x in loc if x is not culprit and (x.beyond_expected if excess else x.locally_diverged)]
    if not culprit.locally_diverged and not culprit.beyond_expected:
        if led:
            return ([], "pass", [])
        return ([f"No layer adds error beyond the rule on its own (the largest local NRMSE is "
                 f"{num(culprit.local_nrmse)}, at {culprit.name}): the divergence is reduced-precision "
                 f"error building up over the model; repair finds the segments to keep in fp32 to meet a "
                 f"target."], "warn", [culprit.name])
    what = ("more departure from its int8 simulation" if sim else "more error beyond rounding" if excess
            else "more error")
    value = (f"sim excess {ratio(measure(culprit))}" if sim else f"local excess {ratio(measure(culprit))}" if excess
             else f"local NRMSE {num(culprit.local_nrmse)}")
    shared = [x for x in loc if x is not culprit and x.name in own and measure(x) is not None
              and measure(x) * SHARED >= measure(culprit)]
    if shared:
        return _shared_blame(culprit, shared, measure, excess, "sim excess" if sim else None)
    if times is not None and times >= STANDS_OUT:
        s = f"{culprit.name} adds {ratio(times)} {what} than any other layer ({value})"
    else:
        s = (f"{culprit.name} adds the most {what[5:]} of its own ({value}"
             + (f", {ratio(times)} the next layer's" if times is not None else "") + ")")
    if after and len(inherit) == len(after):
        s += "; the rows after it inherit it."
    elif own:
        verb = "adds error of its own" if len(own) == 1 else "add error of their own"
        s += f"; {plural(len(own), 'other row')} {verb} too: {names(own, 3)}."
    else:
        s += "."
    return ([s], "fail", [culprit.name] + own[:3])


def _shared_blame(culprit: Any, shared: list[Any], measure: Any, excess: bool,
                  label: str | None = None) -> tuple[list[str], str, list[str]]:
    """Several rows add error of their own within SHARED× of the largest: no single one is named as
    the layer that adds it; more than SPREAD of them is error spread over the model. ``label``: what
    ``measure`` is, when not the local excess or NRMSE (the departure from the int8 simulation)."""
    group = sorted([culprit, *shared], key=lambda x: -measure(x))
    lo, hi = measure(group[-1]), measure(group[0])
    what = label or ("local excess" if excess else "local NRMSE")
    span = (f"{ratio(lo)}–{ratio(hi)}" if excess else f"{num(lo)}–{num(hi)}")
    if len(group) > SPREAD:
        return ([f"{plural(len(group), 'layer')} add error of their own within {SHARED:g}× of each other "
                 f"({what} {span}): no single layer stands out; the error is spread over the model "
                 f"(reduced precision, or one defect repeated in every layer); repair finds the segments "
                 f"to keep in fp32 to meet a target."], "warn", [])
    who = ", ".join(x.name for x in group[:-1]) + f" and {group[-1].name}"
    return ([f"{who} add error of their own within {SHARED:g}× of each other ({what} {span}): no single "
             f"layer stands out; check each of them."], "fail", [x.name for x in group])


def verify_finding(r: Any) -> Finding:
    rows = _by_name(r)
    judged = [x for x in r.rows if x.in_rule]
    if not judged:
        shown = [x for x in r.rows if x.status != "compared"]
        why = shown[0].status if shown else "no row"
        return Finding(f"Nothing was judged: no row of the build was compared with the reference "
                       f"({plural(len(r.rows), 'row')}, first {why}); is this the reference of the model this "
                       f"build came from?", "fail", [])
    sentences: list[str] = []
    cited: list[str] = []
    status = "pass"
    rank = {"pass": 0, "warn": 1, "fail": 2}
    stale = next((w for w in r.warnings if w.startswith(STALE_PREFIX)), None)
    if stale is not None:
        sentences.append("The build is older than the reference: " + stale[len(STALE_PREFIX):].strip()
                         .rstrip(".") + ".")
        status = "warn"
    lead = len(sentences)       # the sentences below read as if they came first
    exp = getattr(r, "export_differs", None)
    if exp is not None and exp.row:
        sentences.append(f"The fp32 export already differs from torch at {exp.row} (nrmse {num(exp.nrmse)} on the "
                         f"first sample): not an int8 effect; verify an ort build next (leapp-lab compile "
                         f"{exp.onnx} --engine ort, then leapp-lab verify with the same reference).")
        cited.append(exp.row)
        status = "fail"
        lead = len(sentences)
    elif r.expected is not None:
        s, st, c = _expected_lead(r, rows)
        sentences += s
        cited += c
        status = max(status, st, key=rank.get)
    # with an expectation, a layer only counts as adding error when it is beyond what rounding explains
    if r.local and (r.expected is None or r.beyond_expected):
        s, st, c = _local(r, rows, led=len(sentences) > lead)
        sentences += s
        cited += c
        status = max(status, st, key=rank.get)
    diverged = [x for x in judged if x.diverged]
    if len(sentences) == lead:
        fd = rows.get(r.first_divergent) if r.first_divergent else None
        if fd is not None:
            sentences.append(f"{fd.name} is the first divergent row in model order ({_why(r, fd)}); "
                             f"{len(diverged)} of {plural(len(judged), 'judged row')} diverge.")
            sentences.append(f"A local verify tells whether {fd.name} adds that error or inherits it from "
                             f"the rows before it.")
            cited.append(fd.name)
            status = "fail"
        else:
            crit = " or ".join(w for k, w, _ in r.rule.criteria_table() if k in ("nrmse", "cosine", "mape"))
            sentences.append(f"Every judged row is within the rule ({plural(len(judged), 'row')}; none has {crit}).")
    missing = [x for x in r.rows if x.status == "not-in-engine"]
    if missing and len(sentences) < 3:
        fused = sum(1 for x in missing if "fused" in (x.note or ""))
        how = f", {fused} fused away by its graph optimisation" if fused else ""
        sentences.append(f"{plural(len(missing), 'row')} {'is' if len(missing) == 1 else 'are'} not in the engine"
                         f"{how} (status not-in-engine): {names([x.name for x in missing], 3)}.")
        cited += [x.name for x in missing[:3]]
    if r.max_mape is not None and r.exit_code:
        over = [n for n in r.exceeded if n in rows]
        # a row with nothing finite was failed by the gate without a mape: it was not judged too high
        above = [n for n in over if getattr(rows[n], "mape", None) is not None]
        blank = [n for n in over if n not in above]
        why = ([f"mape above {r.max_mape:g}% on {names(above, 3)}"] if above else []) + \
              ([f"nothing finite to compare on {names(blank, 3)}"] if blank else [])
        sentences.append(f"The gate fails: {'; '.join(why) or f'mape above {r.max_mape:g}% on a judged output'}.")
        cited += over[:3]
        status = "fail"
    return Finding(" ".join(sentences[:3]), status, cited)


# -- compare ------------------------------------------------------------------------------------------
def _side_name(s: Any, mode: str) -> str:
    return f"{s.key} ({s.build_name or s.engine or s.build})" if mode == "diff" else s.label


def _change(row: Any, side: str) -> str:
    ch = row.changes.get(side, {}).get("nrmse")
    if ch is None or (ch.a is None and ch.b is None):
        return ""
    return f", nrmse {num(ch.a)} → {num(ch.b)}" + (f", {ratio(ch.ratio)}" if ch.ratio is not None else "")


def compare_finding(c: Any) -> Finding:
    if not c.sides:
        return Finding("A compare of no runs.", "warn")
    base = c.baseline
    if c.mode == "diff" and len(c.sides) == 2:
        b = c.sides[1]
        to_fail, to_pass = c.to_fail, c.to_pass
        flipped = c.flipped()
        a_name, b_name = _side_name(base, "diff"), _side_name(b, "diff")
        if flipped:
            f = flipped[0]
            counts = " and ".join(x for x in (f"{len(to_fail)} to fail" if to_fail else "",
                                              f"{len(to_pass)} to pass" if to_pass else "") if x)
            text = (f"{plural(len(flipped), 'row')} flipped from {a_name} to {b_name} ({counts}); the first in "
                    f"model order is {f.name} ({f.verdicts.get(base.key)} → "
                    f"{f.verdicts.get(b.key)}{_change(f, b.key)}).")
            if to_fail and to_fail[0] != f.name:
                g = c.row(to_fail[0])
                text += f" First flip to fail: {g.name} ({_change(g, b.key).lstrip(', ')})."
            return Finding(text, "fail" if to_fail else "pass", [f.name] + to_fail[:1])
        moved = [r for r in c.rows if r.changes.get(b.key, {}).get("nrmse") is not None
                 and r.changes[b.key]["nrmse"].ratio not in (None, 0)]
        if moved:
            import math
            big = max(moved, key=lambda r: abs(math.log(r.changes[b.key]["nrmse"].ratio)))
            text = (f"No row flipped from {a_name} to {b_name}; the largest change is {big.name}"
                    f"{_change(big, b.key)}.")
            fails = [r.name for r in c.rows if r.verdicts.get(b.key) == "fail"]
            return Finding(text, "warn" if fails else "pass", [big.name])
        return Finding(f"No row flipped from {a_name} to {b_name}.", "pass")
    parts, cited, any_fail = [], [], False
    first = [(s, s.first_divergent) for s in c.sides]
    diverging = [(s, n) for s, n in first if n]
    for s, n in diverging[:3]:
        cell = c.cell(n, s.key)
        nr = f" (nrmse {num(cell.nrmse)})" if cell is not None else ""
        parts.append(f"{s.label} first diverges at {n}{nr}")
        cited.append(n)
        any_fail = True
    clean = [s.label for s, n in first if not n]
    text = "; ".join(parts)
    if clean:
        text += ("; " if text else "") + f"{names(clean)} pass{'es' if len(clean) == 1 else ''} every judged row"
    text += "."
    for s in c.sides[1:]:
        flips = [r for r in c.rows if r.flips.get(s.key) == "to-fail"]
        if flips:
            f = flips[0]
            text += (f" Against {base.label}, {plural(len(flips), 'row')} flip to fail on {s.label}, first "
                     f"{f.name}{_change(f, s.key).replace(', ', ' (', 1)}{')' if _change(f, s.key) else ''}.")
            cited.append(f.name)
            break
    return Finding(text, "fail" if any_fail else "pass", cited)
