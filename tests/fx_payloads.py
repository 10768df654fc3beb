"""Crafted node graphs that try to run code from a run folder's ``nodes/<i>/module.json``.

Each payload is a chain of stored FX nodes spliced in after the graph's first placeholder: it walks
from a tensor to a Python function's globals (``getattr`` with attribute names as string
arguments), takes ``exec`` / ``__import__`` out of the builtins and calls it, through
``max(key=...)``, through ``operator.call``, or through a ``call_method`` ``get`` on the builtins
dict. The code it would run writes ``marker``; the tests check that file never appears.
"""
from __future__ import annotations

import json
from pathlib import Path


def _n(name, target, args, kwargs=(), op="call_function"):
    return {"op": op, "name": name, "target": target, "args": args, "kwargs": [list(p) for p in kwargs]}


def _globals_chain(x: str) -> list[dict]:
    """tensor -> type -> a Python method -> its __globals__ -> the builtins dict (node 'pw_b')."""
    return [_n("pw_cls", "builtins.getattr", [{"node": x}, "__class__"]),
            _n("pw_fn", "builtins.getattr", [{"node": "pw_cls"}, "__repr__"]),
            _n("pw_glb", "builtins.getattr", [{"node": "pw_fn"}, "__globals__"]),
            _n("pw_b", "_operator.getitem", [{"node": "pw_glb"}, "__builtins__"])]


def _code(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran')"


def max_key(x: str, marker: Path) -> list[dict]:
    """exec called as the key function of max()."""
    return _globals_chain(x) + [
        _n("pw_exec", "_operator.getitem", [{"node": "pw_b"}, "exec"]),
        _n("pw_run", "builtins.max", [[_code(marker)]], [("key", {"node": "pw_exec"})])]


def operator_call(x: str, marker: Path) -> list[dict]:
    """exec called through operator.call."""
    return _globals_chain(x) + [
        _n("pw_exec", "_operator.getitem", [{"node": "pw_b"}, "exec"]),
        _n("pw_run", "_operator.call", [{"node": "pw_exec"}, _code(marker)])]


def method_get(x: str, marker: Path) -> list[dict]:
    """__import__ taken with a call_method 'get' on the builtins dict, then os.system."""
    return _globals_chain(x) + [
        _n("pw_imp", "get", [{"node": "pw_b"}, "__import__"], op="call_method"),
        _n("pw_os", "_operator.call", [{"node": "pw_imp"}, "os"]),
        _n("pw_sys", "builtins.getattr", [{"node": "pw_os"}, "system"]),
        _n("pw_run", "_operator.call", [{"node": "pw_sys"}, f"touch {marker}"])]


PAYLOADS = {"max_key": max_key, "operator_call": operator_call, "method_get": method_get}


def splice(doc: dict, chain: list[dict]) -> dict:
    """``doc`` with ``chain`` after its last placeholder (so every node it refers to exists)."""
    nodes = doc["nodes"]
    at = max(i for i, n in enumerate(nodes) if n["op"] == "placeholder") + 1
    return {**doc, "nodes": nodes[:at] + chain + nodes[at:]}


def first_placeholder(doc: dict) -> str:
    return next(n["name"] for n in doc["nodes"] if n["op"] == "placeholder")


def craft(node_dir: Path, payload: str, marker: Path) -> None:
    """Rewrite ``node_dir/module.json`` with the payload spliced in."""
    p = Path(node_dir) / "module.json"
    doc = json.loads(p.read_text())
    doc = {**doc, "nodes": [n for n in doc["nodes"] if not n["name"].startswith("pw_")]}
    p.write_text(json.dumps(splice(doc, PAYLOADS[payload](first_placeholder(doc), marker))))
