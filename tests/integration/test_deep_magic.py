"""``%%leapp_trace NAME --replay N --step-fn VAR --parity N --exporters NODE --isolate`` in a real
IPython InteractiveShell with real LEAPP: the cell is traced, then traced again for the exporter
matrix and the isolation runs, from the random state it started from."""
from __future__ import annotations

import io
import re
from contextlib import redirect_stdout

import pytest
from IPython.core.interactiveshell import InteractiveShell

SETUP = """import torch
from leapp import annotate
def clip(obs):
    if obs.abs().max() > 1.5:
        obs = obs / 2
    return torch.tanh(obs) * 2.0
def step(inputs, reset):
    return {"clip/action": clip(inputs["clip/obs"])}
draws = []
torch.manual_seed(0)
"""
CELL = """for _ in range(3):
    o = torch.randn(2, 4) * 0.5
    draws.append(o.sum().item())
    x = annotate.input_tensors("clip", {"obs": o})
    annotate.output_tensors("clip", {"action": clip(x)}, export_with="jit")
"""


@pytest.fixture(scope="module")
def shell():
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    with redirect_stdout(io.StringIO()):
        assert sh.run_cell("%load_ext leapp_lab").error_in_exec is None
        assert sh.run_cell(SETUP).error_in_exec is None
    yield sh
    InteractiveShell.clear_instance()


def run(sh, cell):
    buf = io.StringIO()
    with redirect_stdout(buf):
        res = sh.run_cell(cell)
    return res, re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())


def test_deep_flags_of_the_trace_magic(shell, tmp_path):
    res, out = run(shell, f"%%leapp_trace clipm --save-path {tmp_path} --max-cached-io 3 --out rep "
                          f"--replay 5 --step-fn step --parity 4 --exporters clip --isolate\n" + CELL)
    assert res.error_in_exec is None, res.error_in_exec
    g = shell.user_ns["rep"].graph
    assert g.verdict == "pass"
    # the captured steps replay; fresh inputs cross the branch the trace never took
    assert g.replay.closed_loop.status == "ok" and g.replay.fresh.steps == 5
    assert g.replay.fresh.first_divergent == {"step": 2, "output": "clip/action"}
    assert g.parity.n == 4 and g.parity.status == "diverged"
    assert [a.backend for a in g.exporters.attempts] == ["onnx", "onnx-torchscript", "jit", "jit-trace", "pt2"]
    assert g.isolation.decision == "none" and g.isolation.reruns == 2
    # the cell ran 1 + 5 + 2 times, every time from the same random state
    draws = shell.user_ns["draws"]
    assert len(draws) == 3 * 8 and all(draws[i:i + 3] == draws[:3] for i in range(0, 24, 3))
    assert "replay: DIVERGED (tier b)" in out and "has no feedback" in out and "isolation: decision NONE" in out and "ran again 5 times" in out
    assert shell.user_ns["torch"].jit._state._enabled.enabled          # the process is clean


def test_deep_flag_errors(shell, tmp_path):
    res, _ = run(shell, f"%%leapp_trace e --save-path {tmp_path} --replay 2 --step-fn nope\n" + CELL)
    assert "no variable 'nope'" in str(res.error_in_exec)
    assert not (tmp_path / "e").exists()


def test_parity_without_step_fn_is_unavailable_not_refused(shell, tmp_path):
    """No pipeline to drive: the cell and the replay run, parity says why it could not."""
    res, out = run(shell, f"%%leapp_trace nofn --save-path {tmp_path} --max-cached-io 3 --out rep_nofn "
                          f"--replay 3 --parity 3\n" + CELL)
    assert res.error_in_exec is None, res.error_in_exec
    g = shell.user_ns["rep_nofn"].graph
    assert g.verdict == "pass" and g.replay.status == "ok" and g.replay.closed_loop.steps == 3
    assert g.parity.status == "unavailable" and "step_fn" in g.parity.reason and g.parity.checks == []
    assert "parity: UNAVAILABLE" in out
