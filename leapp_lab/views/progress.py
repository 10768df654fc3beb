"""One updating line in the notebook while a magic's step runs (``%%leapp_trace``, ``%leapp_verify``
...): the stage, a bar when the fraction is known, the time so far; green when done, red when it
failed. A view of the API's progress callbacks, nothing more.
"""
from __future__ import annotations

import html
import time
from typing import Any

from IPython.display import HTML, display


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
        self.handle = display(self._html(), display_id=True)

    def _text(self) -> str:
        pct = "" if self.fraction is None else f" {100 * self.fraction:3.0f}%"
        return f"{self.title}:{pct} {self.stage} ({time.perf_counter() - self.t0:.1f} s)"

    def _html(self, done: bool = False, failed: bool = False) -> HTML:
        bar = "" if done or self.fraction is None else \
            f'<progress value="{self.fraction:.3f}" max="1" style="width:160px"></progress> '
        color = "#c62828" if failed else "#2e7d32" if done else "#616161"
        return HTML(f'<div class="leapp-progress" style="font-size:12px;color:{color}">{bar}'
                    f"{html.escape(self._text())}</div>")

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
                self.handle.update(self._html())

    def finish(self, stage: str, failed: bool = False) -> None:
        self.stage, self.fraction = stage, None
        if self.handle is not None:
            self.handle.update(self._html(done=True, failed=failed))
