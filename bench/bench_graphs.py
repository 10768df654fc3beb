"""Benchmark: the offline HTML report of a 2,000-row verify run with a 300-node accuracy graph, in
headless Chromium, side by side with the renderer before issue 11 (no accuracy graph).

The run is real: ``tests/models/scale_verify.py`` writes a 300-node ONNX engine graph, a build
folder and a reference npz, and ``leapp_lab.verify`` compares them (2,000 rows, 2 samples). The
same run folder is rendered twice: by this tree, and by the renderer of a baseline commit (default
``a1196a6``, the issue-7 refactor this work started from), exported with ``git archive`` and run in
a subprocess. Each page is opened alternately ``--repeat`` times in Debian's Chromium (Playwright,
``/usr/bin/chromium``) and measured in the page:

* first contentful paint (the browser's ``paint`` timing);
* view ready: the table drawn and the first divergent row's histogram painted;
* graph tab: click to the accuracy graph laid out (dagre) and painted (this tree only);
* unfold all: every module scope unfolded (300 boxes) and painted (this tree only);

and the file size. Best (minimum) of the repeats is printed.

    .venv/bin/python bench/bench_graphs.py                  # 2,000 rows, 300 nodes, 3 rounds
    .venv/bin/python bench/bench_graphs.py --rows 200 --nodes 60 --repeat 1     # a quick check
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]

READY = """() => { const p = document.querySelector('[data-leapp-hist-row]');
    return p && p.querySelector('.main-svg') && document.querySelector('tr[data-leapp-row]') ? performance.now() : false; }"""
FCP = """() => { const e = performance.getEntriesByName('first-contentful-paint')[0]; return e ? e.startTime : false; }"""
# click, then two animation frames: the layout runs in the ResizeObserver callback before paint
# (``done`` present, or with ``gone``: absent)
CLICK_PAINTED = """async ([sel, done, gone]) => { const t0 = performance.now(); document.querySelector(sel).click();
    const ok = () => !!document.querySelector(done) !== gone;
    for (let i = 0; i < 200 && !ok(); i++) await new Promise(r => requestAnimationFrame(r));
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    return ok() ? performance.now() - t0 : null; }"""


def make_run(root: Path, rows: int, nodes: int) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.models.scale_verify import make_scale_run
    t = time.perf_counter()
    rep = make_scale_run(root / "data", rows=rows, nodes=nodes)
    print(f"run: {len(rep.table())} rows, {len(rep.graph.nodes)} graph nodes, first divergent "
          f"{rep.first_divergent} (made and verified in {time.perf_counter() - t:.1f}s)")
    return rep.path


def render(run: Path, out: Path, source: Path) -> float:
    """``leapp-lab report`` of ``run`` by the leapp_lab in ``source``, in a fresh process; seconds."""
    code = ("import sys; from leapp_lab.model.base import load; from leapp_lab.views.html import to_html; "
            "to_html(load(sys.argv[1]), sys.argv[2])")
    env = dict(os.environ, PYTHONPATH=str(source))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(run), str(out)], check=True, env=env, cwd=source, timeout=600)
    return time.perf_counter() - t


def baseline_tree(ref: str, dest: Path) -> Path | None:
    """The baseline commit's files (``git archive``), or None with a message when this checkout
    cannot give them (no git, a shallow clone without that commit)."""
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        err = getattr(exc, "stderr", b"") or b""
        print(f"baseline {ref}: not available here ({err.decode(errors='replace').strip() or exc}); "
              f"measuring this tree only")
        return None
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(browser, html: Path, graph: bool) -> dict:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri())
    ready = page.wait_for_function(READY, polling="raf", timeout=120000).json_value()
    fcp = page.wait_for_function(FCP, timeout=120000).json_value()
    m = {"fcp_ms": fcp, "ready_ms": ready}
    if graph:
        m["graph_ms"] = page.evaluate(CLICK_PAINTED, ["[data-leapp-tab='graph']", "[data-leapp-panel='graph'] svg .leapp-gunit", False])
        m["graph_boxes"] = page.locator("[data-leapp-panel='graph'] svg .leapp-gunit").count()
        m["unfold_ms"] = page.evaluate(CLICK_PAINTED, ["[data-leapp-graph-unfold]",
                                                       "[data-leapp-panel='graph'] svg [data-leapp-scope]", True])
        m["unfold_boxes"] = page.locator("[data-leapp-panel='graph'] svg .leapp-gunit").count()
    page.close()
    if errors:
        raise RuntimeError(f"{html}: page errors: {errors}")
    return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", default="a1196a6", help="git commit of the renderer to compare with")
    ap.add_argument("--dir", help="where to write the run and pages (default: a temp folder, removed after)")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="leapp-lab-bench-graphs-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        run = make_run(root, args.rows, args.nodes)
        pages = {"this tree": root / "now.html"}
        t_now = render(run, pages["this tree"], ROOT)
        base_src = baseline_tree(args.baseline, root / "baseline")
        if base_src is not None:
            pages[f"baseline {args.baseline}"] = root / "baseline.html"
            render(run, pages[f"baseline {args.baseline}"], base_src)
        print(f"rendered in {t_now:.1f}s (this tree); cores: {os.cpu_count()}")
        results: dict[str, list[dict]] = {k: [] for k in pages}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
            try:
                for i in range(args.repeat):
                    for name, html in pages.items():
                        results[name].append(measure(browser, html, graph=name == "this tree"))
                    print(f"  round {i + 1}: " + "   ".join(
                        f"{n}: ready {r[-1]['ready_ms']:.0f} ms" for n, r in results.items()))
            finally:
                browser.close()
        summary = {}
        for name, html in pages.items():
            best = {k: min(r[k] for r in results[name]) for k in results[name][0]}
            best["html_mb"] = html.stat().st_size / 1e6
            summary[name] = best
            line = (f"{name:>18}: HTML {best['html_mb']:.2f} MB   first contentful paint {best['fcp_ms']:.0f} ms   "
                    f"view ready {best['ready_ms']:.0f} ms")
            if "graph_ms" in best:
                line += (f"   graph tab {best['graph_ms']:.0f} ms ({best['graph_boxes']} boxes)   "
                         f"unfold all {best['unfold_ms']:.0f} ms ({best['unfold_boxes']} boxes)")
            print(line)
        if args.json:
            Path(args.json).write_text(json.dumps({"rows": args.rows, "nodes": args.nodes, "cores": os.cpu_count(),
                                                   "baseline": args.baseline, "best": summary, "rounds": results},
                                                  indent=1))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
