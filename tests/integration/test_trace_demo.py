"""``leapp-lab demo``: the embedded frozen-constant pipeline, traced and diagnosed, deterministically."""
from __future__ import annotations

import pytest

import leapp_lab
from leapp_lab.cli import main
from leapp_lab.examples import frozen_constant


def test_demo_diagnoses_the_frozen_spread(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "first failing: node 'normalizer', port 'features', sample 1" in out
    r = leapp_lab.load(tmp_path / "frozen_constant")
    g = r.graph
    assert [(n.name, n.verdict) for n in g.nodes] == [("normalizer", "fail"), ("policy", "pass")]
    rows = [c.passed for c in g.checks if c.port == "features"]
    assert rows == [True] + [False] * (frozen_constant.SAMPLES - 1)
    # the flagged literal is the .item() spread of the first (seeded) observation, + 1e-6
    obs0 = frozen_constant.observations()[0]
    (lit,) = [v for n in g.nodes for f in n.fx.nodes if f.suspect for v in f.literals]
    assert lit == pytest.approx(obs0.std().item() + 1e-6, rel=1e-12)
    assert f"div = torch.div(sub, {lit!r})" in out
    if "frozen-constant" in {h.kind for h in g.hazards}:   # H2's rules are installed
        h = next(h for h in g.hazards if h.kind == "frozen-constant")
        assert (h.node, h.port, h.samples) == ("normalizer", "features", [1, 2, 3, 4])
