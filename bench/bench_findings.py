"""Benchmark: is the finding right on the labelled corpus of real clients' exports?

Runs every labelled run of ``tests/corpus/labels.json`` (Isaac Lab's export path for rsl_rl, sb3,
skrl and rl_games with the real libraries, LEAPP's own examples, our pipelines; each clean and
with realistic bugs) as a new user would, ``leapp-lab run SCRIPT --json F -- ARGS`` in an empty
folder, and scores what the report says against the label:

- **status**: ``pass`` when the run exits 0 and no graph holds a hazard, else ``fail``;
- **cause**: the hazard kind the finding names first (``None`` when it names none), and the label's
  ``evidence`` word (the module and buffer, the frozen tensor) in the finding;
- **node** / **port**: those of the graph's first hazard of that kind;
- **fix**: the label's keyword appears in the finding (case-insensitive).

A clean run is right when its status is ``pass`` (no hazard, exit 0). It prints one line per run
(``ok`` or each field that is wrong, expected -> got) and the totals per field and overall.

    .venv/bin/python bench/bench_findings.py                 # every run (minutes: each is a process)
    .venv/bin/python bench/bench_findings.py --only rsl_rl   # runs whose id contains a word
    .venv/bin/python bench/bench_findings.py --json score.json
    .venv/bin/python bench/bench_findings.py --code ../main              # main's leapp_lab on it
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # this tree's leapp_lab, whatever is installed
LABELS = ROOT / "tests" / "corpus" / "labels.json"
FIELDS = ("status", "node", "port", "cause", "fix")


def load_labels(path: Path = LABELS) -> list[dict]:
    return json.loads(path.read_text())["runs"]


def observe(report: dict, exit_code: int) -> dict:
    """What a user reads in one run's ``--json`` report: status, the cause the finding names, and
    the node / port of that hazard."""
    from leapp_lab.model.trace import HAZARD_KINDS
    finding = report.get("finding") or ""
    if isinstance(finding, dict):          # a structured finding: its text is what a user reads
        finding = finding.get("text") or json.dumps(finding)
    hazards = [h for g in report.get("graphs", []) for h in g.get("hazards", [])]
    kinds = set(HAZARD_KINDS) | {h["kind"] for h in hazards}     # a report newer than this tree
    named = [(finding.find(k), k) for k in kinds if k in finding]
    cause = min(named)[1] if named else None
    first = next((h for h in hazards if h["kind"] == cause), None)
    return {"status": "pass" if exit_code == 0 and not hazards else "fail",
            "node": first["node"] if first else None, "port": first["port"] if first else None,
            "cause": cause, "finding": finding, "exit_code": exit_code,
            "hazards": [[h["kind"], h["node"], h["port"], h["samples"]] for h in hazards]}


def score(label: dict, got: dict) -> dict[str, bool]:
    """Each field right or wrong. A clean label (status pass) is scored on its status alone: no
    hazard and exit 0 leave nothing to name."""
    if label["status"] == "pass":
        ok = got["status"] == "pass"
        return {f: ok for f in FIELDS}
    right = {f: got[f] == label[f] for f in ("status", "node", "port", "cause")}
    ev = label.get("evidence")
    right["cause"] = right["cause"] and (ev is None or ev.lower() in got["finding"].lower())
    kw = label.get("fix")
    right["fix"] = kw is None or kw.lower() in got["finding"].lower()
    return right


def run_one(label: dict, workdir: Path, timeout: float = 600, code: Path = ROOT) -> dict:
    """``leapp-lab run`` on one labelled run, in its own empty folder; the observation. ``code``:
    the tree whose ``leapp_lab`` runs it (another checkout: the score before a change)."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "report.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "leapp_lab.cli", "run", str(ROOT / label["script"]), "--json", str(out),
           "--quiet"] + (["--", *label["args"]] if label["args"] else [])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    if not out.exists():
        return {"status": "fail", "node": None, "port": None, "cause": None, "exit_code": p.returncode,
                "finding": f"no report: {p.stderr.strip().splitlines()[-1:] or ''}", "hazards": [],
                "seconds": seconds}
    got = observe(json.loads(out.read_text()), p.returncode)
    got["seconds"] = seconds
    return got


def line(label: dict, got: dict, right: dict[str, bool]) -> str:
    def why(f: str) -> str:
        if f == "fix":
            return f"fix: keyword {label['fix']!r} missing"
        if f == "cause" and got["cause"] == label["cause"]:
            return f"cause: evidence {label.get('evidence')!r} missing"
        return f"{f}: {label[f]!r} -> {got.get(f)!r}"
    wrong = [why(f) for f in FIELDS if not right[f]]
    kind = "clean" if label["status"] == "pass" else "bug  "
    return (f"{label['id']:<32} {kind} {got.get('seconds', 0):6.1f}s  "
            + ("ok" if not wrong else "WRONG " + "; ".join(wrong)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="run only ids containing this word")
    ap.add_argument("--json", help="write every run's label, observation and score here")
    ap.add_argument("--keep", help="keep the run folders under this folder")
    ap.add_argument("--code", default=str(ROOT),
                    help="the tree whose leapp_lab runs the corpus (default: this one), e.g. a checkout "
                         "of main to score it before a change")
    args = ap.parse_args(argv)
    labels = [x for x in load_labels() if not args.only or any(w in x["id"] for w in args.only)]
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_findings_"))
    totals = {f: 0 for f in FIELDS}
    all_right = 0
    results = []
    for label in labels:
        got = run_one(label, base / label["id"], code=Path(args.code))
        right = score(label, got)
        print(line(label, got, right), flush=True)
        for f in FIELDS:
            totals[f] += right[f]
        all_right += all(right.values())
        results.append({"label": label, "got": got, "right": right})
    n = len(labels)
    clean = sum(x["status"] == "pass" for x in labels)
    print(f"\n{n} runs ({clean} clean, {n - clean} with a bug): "
          + ", ".join(f"{f} {totals[f]}/{n}" for f in FIELDS) + f"; all five right {all_right}/{n}")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": results, "totals": totals, "all_right": all_right,
                                               "n": n}, indent=1))
    return 0 if all_right == n else 1


if __name__ == "__main__":
    sys.exit(main())
