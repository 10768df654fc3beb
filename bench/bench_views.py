"""Benchmark: the offline verify report at 2,000 rows in headless Chromium, side by side with the
renderer before issue 11 (the baseline commit's leapp_lab + extensions, run from a temporary copy).

Both pages show the same real verify run (tests/scale_report.py: 2,000 rows x 3 samples), written
by each code base's own ``to_html``. Measured in one run, alternating, in Debian's Chromium:

* HTML size;
* first paint: navigation start -> the frame after the first table row exists;
* row click -> histogram painted (median of 10 rows on screen);
* "divergent only" toggle -> table redrawn (both renderers have it);
* search keystroke -> table filtered (median of 6 keystrokes; the baseline has no search);
* sort click -> table redrawn;
* graph tab -> drawn, when the view has a graph tab.

    .venv/bin/python bench/bench_views.py                    # 2,000 rows, 3 rounds
    .venv/bin/python bench/bench_views.py --rows 500 --rounds 1
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BASELINE = "a1196a6"        # main at the issue-7 refactor: the renderer before issue 11
CHROMIUM = "/usr/bin/chromium"

FIRST_PAINT_JS = """
window.__fp = null;
new MutationObserver((_, obs) => {
  if (document.querySelector('tr[data-leapp-row]')) {
    obs.disconnect();
    requestAnimationFrame(() => requestAnimationFrame(() => { window.__fp = performance.now(); }));
  }
}).observe(document, {childList: true, subtree: true});
"""
PAINTED = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
CLICK_ROW_JS = """async id => {
  const tr = [...document.querySelectorAll('tr[data-leapp-row]')].find(e => e.dataset.leappRow === id);
  const t0 = performance.now();
  tr.click();
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const p = document.querySelector('[data-leapp-hist-row]');
  if (p.getAttribute('data-leapp-hist-row') !== id || !p.querySelector('.trace.bars .point path')) return null;
  return performance.now() - t0; }"""
VISIBLE_ROWS_JS = """n => { const w = document.querySelector('.leapp-tablewrap').getBoundingClientRect();
  return [...document.querySelectorAll('tr[data-leapp-row]:not(.leapp-selected)')].filter(tr => {
    const r = tr.getBoundingClientRect(); return r.top >= w.top + 30 && r.bottom <= w.bottom; })
    .slice(0, n).map(tr => tr.dataset.leappRow); }"""
TIMED_JS = """async what => {
  const t0 = performance.now();
  if (what === 'filter') { const b = document.querySelector('input[data-leapp-filter]'); b.click(); }
  else if (what === 'sort') document.querySelector("th[data-leapp-col='nrmse']").click();
  else if (what === 'graph') document.querySelector("[data-leapp-tab='graph']").click();
  else { const s = document.querySelector('input[data-leapp-search]'); s.value += what;
         s.dispatchEvent(new Event('input', {bubbles: true})); }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return performance.now() - t0; }"""


def baseline_html(run: Path, out: Path, rev: str, work: Path) -> Path | None:
    """The baseline renderer's report of ``run``: its leapp_lab + extensions from git, in ``work``."""
    old = work / "baseline"
    old.mkdir()
    try:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "leapp_lab", "extensions"],
                             check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"baseline {rev} not available ({exc}); measuring the new renderer only")
        return None
    subprocess.run(["tar", "-x", "-C", str(old)], input=tar, check=True)
    run = _old_histograms(run, work / "baseline_run")
    code = ("import leapp_lab, sys; from leapp_lab.views.html import to_html; "
            "to_html(leapp_lab.load(sys.argv[1]), sys.argv[2])")
    # cwd: the baseline copy, so that "-c" does not put this checkout first on sys.path
    subprocess.run([sys.executable, "-c", code, str(run), str(out)], check=True, cwd=str(old),
                   env={**os.environ, "PYTHONPATH": str(old)})
    return out


def _old_histograms(run: Path, copy: Path) -> Path:
    """``run`` as a baseline before issue 18 reads it: histograms.npz in the layout it wrote (one
    member per row: [zero, first_bin, len, counts.., 0 padding]) instead of the packed lines/counts,
    so that both renderers draw the same per-sample histograms."""
    import shutil

    import numpy as np

    from leapp_lab.model.jsonio import load_npz, save_npz
    z = load_npz(run / "histograms.npz")
    if sorted(z) != ["counts", "lines"]:
        return run
    shutil.copytree(run, copy)
    names = [r["name"] for r in __import__("json").loads((run / "report.json").read_text())["rows"]]
    per_row: dict = {}
    at = 0
    for j, zero, first, n in z["lines"].tolist():
        per_row.setdefault(names[j], []).append([zero, first, n, *z["counts"][at:at + n].tolist()])
        at += n
    packed = {}
    for name, lines in per_row.items():
        a = np.zeros((len(lines), max(map(len, lines))), dtype=np.int64)
        for i, line in enumerate(lines):
            a[i, :len(line)] = line
        packed[name] = a
    save_npz(copy / "histograms.npz", packed)
    return copy


def measure(browser, path: Path) -> dict[str, float | None]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.add_init_script(FIRST_PAINT_JS)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.__fp !== null", timeout=60000)
    out: dict[str, float | None] = {"first paint": page.evaluate("() => window.__fp")}
    page.wait_for_selector("[data-leapp-hist-row] .main-svg", timeout=60000)
    page.evaluate(PAINTED)
    clicks = [page.evaluate(CLICK_ROW_JS, rid) for rid in page.evaluate(VISIBLE_ROWS_JS, 10)]
    out["row click -> histogram"] = statistics.median(c for c in clicks if c is not None)
    out["divergent-only toggle"] = page.evaluate(TIMED_JS, "filter")
    page.evaluate(TIMED_JS, "filter")                  # back to every row
    if page.locator("input[data-leapp-search]").count():
        keys = [page.evaluate(TIMED_JS, ch) for ch in "matmul"]
        out["search keystroke"] = statistics.median(keys)
    else:
        out["search keystroke"] = None
    out["sort click"] = page.evaluate(TIMED_JS, "sort")
    out["graph tab"] = page.evaluate(TIMED_JS, "graph") if page.locator("[data-leapp-tab='graph']").count() else None
    ctx.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", default=BASELINE, help="git revision of the renderer to compare with")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from leapp_lab.views.html import to_html
    from tests.scale_report import scale_verify
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rep = scale_verify(work / "run", rows=args.rows, samples=args.samples)
        new = work / "new.html"
        to_html(rep, new)
        old = baseline_html(rep.path, work / "old.html", args.baseline, work)
        pages = {"new": new, **({"baseline": old} if old else {})}
        results: dict[str, list[dict]] = {k: [] for k in pages}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            for i in range(args.rounds):
                for name, path in pages.items():
                    results[name].append(measure(browser, path))
                line = "  ".join(f"{n} first paint {results[n][-1]['first paint']:.0f} ms" for n in pages)
                print(f"  round {i + 1}: {line}")
            browser.close()
        print(f"{datetime.date.today()} · {os.cpu_count()} cores · {args.rows} rows x {args.samples} samples · "
              f"baseline {args.baseline} · median of {args.rounds} rounds")
        print(f"{'':28}{'baseline':>14}{'new':>14}{'new/baseline':>14}")
        size = {n: p.stat().st_size / 1e6 for n, p in pages.items()}
        print(f"{'HTML size (MB)':28}{size.get('baseline', float('nan')):>14.2f}{size['new']:>14.2f}"
              f"{size['new'] / size['baseline'] if 'baseline' in size else float('nan'):>14.2f}")
        for key in results["new"][0]:
            med = {}
            for n in pages:
                vals = [r[key] for r in results[n] if r[key] is not None]
                med[n] = statistics.median(vals) if vals else None
            b, v = med.get("baseline"), med["new"]
            cell = lambda x: f"{x:>11.0f} ms" if x is not None else f"{'n/a':>14}"   # noqa: E731
            ratio = f"{v / b:>14.2f}" if b and v is not None else f"{'':>14}"
            print(f"{key:28}{cell(b)}{cell(v)}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
