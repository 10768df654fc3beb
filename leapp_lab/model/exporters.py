"""The exporter matrix: every node tried with every export backend, as advice.

The integration guide's fallback strategy: when an export fails or validates wrong, retrace in a
fresh session and output folder, original state reset, with the node's ``export_with`` changed,
and keep a record of backend, outcome and the narrow error. leapp_lab re-runs the traced body once
per node and backend with only that node's ``export_with`` overridden. Nothing is substituted:
the user's code keeps its own backend.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .dc import Plain
from .sections import SectionBase, register_section

BACKENDS = ("onnx", "onnx-torchscript", "jit", "jit-trace", "pt2")


@dataclass
class ExporterAttempt(Plain):
    node: str
    backend: str                       # the export_with tried
    resolved: str | None = None        # LEAPP's name for it (onnx-dynamo, jit-script, exported-program, ...)
    current: bool = False              # the backend the traced code itself uses for this node
    outcome: str = "error"             # pass | fail | export-error | error
    exported: bool = False             # LEAPP compiled the node with this backend
    verdict: str | None = None         # LEAPP's validation verdict of the node: pass | fail | error | skipped
    error: str | None = None           # the narrow error (export-error / error)
    error_type: str | None = None
    max_abs: float | None = None       # max |exported − recorded| over the node's outputs and samples (was max_diff)
    failed_samples: int = 0
    time_s: float | None = None        # the whole attempt: the body traced again, export, validation
    export_s: float | None = None      # from leaving the body to the saved report (compile + validate)
    run_dir: str | None = None         # the attempt's own run folder
    RENAMED: ClassVar[dict[str, str]] = {"max_diff": "max_abs"}   # older reports


@register_section
@dataclass
class ExporterMatrix(SectionBase, Plain):
    section: ClassVar[str] = "exporters"
    status: str = "skipped"            # ok | failed | unavailable | skipped
    reason: str | None = None
    nodes: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    attempts: list[ExporterAttempt] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)    # one sentence per node
    reruns: int = 0                    # how many times the body ran again
    notes: list[str] = field(default_factory=list)

    def attempt(self, node: str, backend: str) -> ExporterAttempt:
        for a in self.attempts:
            if a.node == node and a.backend == backend:
                return a
        raise KeyError(f"no attempt for node {node!r} with {backend!r}; tried: "
                       f"{sorted({(a.node, a.backend) for a in self.attempts})}")

    def passing(self, node: str) -> list[str]:
        """The backends that exported ``node`` and passed validation."""
        return [a.backend for a in self.attempts if a.node == node and a.outcome == "pass"]

    def to_dataframe(self):
        import pandas as pd
        cols = ["node", "backend", "resolved", "current", "outcome", "exported", "verdict", "max_abs",
                "failed_samples", "error", "time_s", "export_s"]
        return pd.DataFrame([{k: getattr(a, k) for k in cols} for a in self.attempts], columns=cols)
