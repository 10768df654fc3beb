"""LEAPP's DEBUG records must not reach a root handler someone else installed (onnxruntime's
quantize_static calls logging.warning, which runs logging.basicConfig()): a notebook cell would
otherwise drown in FX dumps. The capture itself still keeps every record."""
from __future__ import annotations

import logging

import torch
from leapp import annotate

import leapp_lab


def test_root_handler_sees_no_leapp_records_and_propagation_is_restored(tmp_path):
    seen: list[str] = []

    class Names(logging.Handler):
        def emit(self, record):
            seen.append(record.name)

    root_handler = Names(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(root_handler)
    root.setLevel(logging.DEBUG)
    try:
        assert logging.getLogger("leapp").propagate is True
        with leapp_lab.trace("quiet_root", save_path=str(tmp_path), max_cached_io=2) as t:
            for i in range(2):
                x = annotate.input_tensors("n", {"x": torch.randn(2, 3) + i})
                annotate.output_tensors("n", {"y": torch.tanh(x)}, export_with="jit")
        assert logging.getLogger("leapp").propagate is True
    finally:
        root.removeHandler(root_handler)
        root.setLevel(old_level)
    assert not [n for n in seen if n == "leapp" or n.startswith("leapp.")]
    graph = t.report.graph
    assert any(r.level == "DEBUG" and "Compiled graph module" in r.message for r in graph.log)
    assert graph.verdict == "pass"
