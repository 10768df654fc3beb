"""One updating line in the notebook while a magic's step runs (``%%leapp_trace``, ``%leapp_verify``
...): the stage, a bar when the fraction is known, the time so far; green when done, red when it
failed. A view of the API's progress callbacks, nothing more.
"""
from __future__ import annotations

import html
import time
from typing import Any

from IPython.display import display


class Progress:
    """One updating line in the notebook for a long step. Accepts both progress signatures used
    by the API: ``(stage, fraction_or_None)`` (prepare) and ``(stage, done, total)`` (compile, verify)."""

    def __init__(self, title: str, min_interval_s: float = 0.25):
        self.title = title
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.min_interval_s = min_interval_s
        self.stage = "starting"
        self.fraction: float | None = None
        self.handle = display(self._bundle(), raw=True, display_id=True)

    def _text(self) -> str:
        pct = "" if self.fraction is None else f" {100 * self.fraction:3.0f}%"
        from leapp_lab.model.messages import printable
        return printable(f"{self.title}:{pct} {self.stage} ({time.perf_counter() - self.t0:.1f} s)")

    def _bundle(self, done: bool = False, failed: bool = False) -> dict[str, str]:
        """The line as HTML, and as text for front-ends without HTML (a terminal IPython, jupyter
        console, nbconvert to text): the same words, never ``<IPython.core.display.HTML object>``."""
        bar = "" if done or self.fraction is None else \
            f'<progress value="{self.fraction:.3f}" max="1" style="width:160px"></progress> '
        color = "#c62828" if failed else "#2e7d32" if done else "#616161"
        text = self._text()
        return {"text/html": f'<div class="leapp-progress" style="font-size:12px;color:{color}">{bar}'
                             f"{html.escape(text)}</div>",
                "text/plain": text}

    def __call__(self, stage: str, *rest: Any) -> None:
        self.stage = str(stage)
        if len(rest) == 1:
            self.fraction = None if rest[0] is None else float(rest[0])
        elif len(rest) >= 2 and rest[1]:
            self.fraction = float(rest[0]) / float(rest[1])
        now = time.perf_counter()
        if now - self.last >= self.min_interval_s:
            self.last = now
            if self.handle is not None:
                self.handle.update(self._bundle(), raw=True)

    def finish(self, stage: str, failed: bool = False) -> None:
        self.stage, self.fraction = stage, None
        if self.handle is not None:
            self.handle.update(self._bundle(done=True, failed=failed), raw=True)


def report_summary(report: Any) -> str:
    """The progress line's last words: what the step's report holds, in one line."""
    from leapp_lab.model.finding import plural
    kind = getattr(report, "kind", "")
    if kind == "trace":
        g = report.graphs
        checks = [c for x in g for c in x.checks]
        bad = sum(c.passed is False for c in checks)
        return (f"{plural(len(g), 'graph')}, {plural(sum(len(x.nodes) for x in g), 'node')}, "
                f"{len(checks) - bad}/{len(checks)} checks pass, {plural(len(report.hazards), 'hazard')}")
    if kind == "verify":
        return f"{plural(len(report.rows), 'row')}, first divergent: {report.first_divergent or 'none'}"
    if kind == "compare":
        return (f"{plural(len(report.sides), 'run')}, {plural(len(report.rows), 'row')}, "
                f"{len(report.to_fail)} flipped to fail, {len(report.to_pass)} flipped to pass")
    if kind == "repair":
        return (f"{report.status}: {len(report.chosen)} of {plural(len(report.segments), 'segment')} in fp32, "
                f"{plural(report.builds, 'build')}")
    if kind == "prepare":
        return (f"{plural(len(report.outputs), 'output')}, {plural(len(report.taps), 'tap')}, "
                f"{plural(report.samples, 'sample')}")
    if kind == "build":
        return f"{report.engine} build, {plural(len(report.taps), 'tap')}, {plural(report.samples, 'sample')}"
    return type(report).__name__
