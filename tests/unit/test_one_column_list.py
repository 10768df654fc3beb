"""One column list, the front-end included (issue 18, Deliver 3): every table column the JS draws
comes from a Python list that the view dict carries (verify: ``leapp_lab.model.columns``; the deep
checks' tables: ``views.deep_view.DEEP_COLUMNS``); no front-end module spells one."""
from __future__ import annotations

import re
from pathlib import Path

import viewfixtures as vf
from test_deep_sections import report  # noqa: F401  (the fixture: a trace report with every section)

from leapp_lab.model.columns import panel_columns, profile_columns, table_columns
from leapp_lab.model.replay import ReplayRow, ReplayRun
from leapp_lab.views import deep_view
from leapp_lab.views.verify_view import lead_columns
from leapp_lab.views.viewdict import build_view

SRC = Path(__file__).resolve().parents[2] / "extensions" / "src"


def test_the_verify_view_carries_the_registry_columns():
    rep = vf.verify_report()
    t = build_view(rep)["table"]
    # every column comes from the registry, in the order the view opens: the finding's lead columns
    # first (issue 21, Deliver 2), then the registry's order; nothing the registry lacks
    reg = {c.key: c for c in table_columns(rep)}
    lead = [k for k in lead_columns(rep) if k in reg]
    assert [c["key"] for c in t["columns"]] == lead + [k for k in reg if k not in lead]
    assert all((c["label"], c["type"]) == (reg[c["key"]].label, reg[c["key"]].fmt) for c in t["columns"])
    assert [c["key"] for c in t["columns"] if not c.get("hidden")] == lead
    assert [c["key"] for c in t["panel_columns"]] == [c.key for c in panel_columns()]
    assert {r["id"]: set(r["cells"]) for r in t["rows"]} == {r["id"]: {c.key for c in table_columns(rep)}
                                                          for r in t["rows"]}
    series = [s["key"] for s in build_view(rep)["profile"]["series"]]
    assert series == [c.key for c in profile_columns(rep)]


def test_each_deep_table_carries_its_python_columns(report):  # noqa: F811
    deep = build_view(report)["deep"]
    assert set(deep) == set(deep_view.DEEP_COLUMNS)
    for name, entries in deep.items():
        want = [list(c) for c in deep_view.DEEP_COLUMNS[name]]
        for e in entries:
            assert [[c["key"], c["label"], c["type"]] for c in e["columns"]] == want, name
            # every cell a column shows is in every row (a status column draws the row's status)
            keys = {k for k, _, fmt in deep_view.DEEP_COLUMNS[name] if fmt != "status"}
            for r in e.get("rows") or [r for run in e.get("runs", []) for r in run["rows"]]:
                assert keys <= set(r["cells"]), (name, keys - set(r["cells"]))
    for run in deep["replay"][0]["runs"]:
        assert [c["key"] for c in run["columns"]] == [k for k, _, _ in deep_view.DEEP_COLUMNS["replay"]]
    # an engine's replay run: its own list, the error against fp32 and the split included
    run = ReplayRun(tier="a", status="ok", steps=1, rows=[ReplayRow(0, "p/a", max_abs=0.1, fp32_max_abs=0.05,
                                                                    own_error=0.02, inherited_error=0.03)])
    got = deep_view._replay_run(run, "g:ort-int8:a", "t", "g", None, "ort-int8")
    assert [c["key"] for c in got["columns"]] == [k for k, _, _ in deep_view.ENGINE_REPLAY_COLUMNS]
    keys = {k for k, _, fmt in deep_view.ENGINE_REPLAY_COLUMNS if fmt != "status"}
    assert keys <= set(got["rows"][0]["cells"])


# a column spelled in JS: ["key", "label", "num"] or { key: "k", label: "l", type: "num" }
_TRIPLE = re.compile(r'\[\s*"[\w.]+"\s*,\s*"[^"]*"\s*,\s*"(?:int|num|cos|x|text|bool|shape|status)"\s*\]')
_OBJECT = re.compile(r'\{\s*key:\s*"[\w.]+"\s*,\s*label:')


def test_no_front_end_module_spells_a_column_list():
    found = []
    for js in sorted(SRC.rglob("*.js")):
        text = js.read_text(encoding="utf-8")
        found += [f"{js.relative_to(SRC)}: {m.group(0)}" for m in (*_TRIPLE.finditer(text), *_OBJECT.finditer(text))]
    assert not found, "columns belong in the view dict (Python), not in the JS:\n" + "\n".join(found[:10])
    deep = (SRC / "views" / "deep.js").read_text(encoding="utf-8")
    assert "const DEEP_COLUMNS" not in deep and "const ENGINE_COLUMNS" not in deep
