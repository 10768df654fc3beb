"""Every TensorRT attribute leapp_lab's TensorRT engines use exists in TensorRT 11's Python API, and
none of the weakly-typed API TensorRT 11 removed is used (builder flags FP16 / INT8,
OBEY_PRECISION_CONSTRAINTS, per-layer precision). The names come from TensorRT 11.4's bindings
wheel (tests/data/tensorrt11_api.txt, made by scripts/tensorrt_api_names.py): this machine cannot
install TensorRT, so the check reads our code's uses from its AST."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "tests" / "data" / "tensorrt11_api.txt"
MODULES = sorted((ROOT / "leapp_lab" / "engines").glob("tensorrt*.py"))
#: variables that hold TensorRT objects in those modules (their methods and properties are API too)
TRT_OBJECTS = {"builder", "network", "parser", "config", "layer", "rt", "engine", "context"}
REMOVED = {"FP16", "INT8", "OBEY_PRECISION_CONSTRAINTS"}       # BuilderFlag members gone in 11


def listed() -> set[str]:
    return {ln.strip() for ln in API.read_text().splitlines() if ln.strip() and not ln.startswith("#")}


def in_api(name: str, names: set[str]) -> bool:
    """Listed, or the tail of a listed name (the linker keeps "mark_debug" inside "unmark_debug")."""
    return name in names or any(n.endswith(name) for n in names)


def _chain(node: ast.AST) -> list[str] | None:
    """``trt.A.B`` -> ["A", "B"]; ``network.mark_debug`` -> ["mark_debug"]; else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "trt":
        return parts[::-1]
    if isinstance(node, ast.Name) and node.id in TRT_OBJECTS and len(parts) == 1:
        return parts
    if (isinstance(node, ast.Name) and node.id == "self" and len(parts) == 2
            and parts[1] in TRT_OBJECTS):
        return parts[:1]
    return None


def uses() -> dict[str, set[str]]:
    """Every TensorRT name the modules read -> where."""
    out: dict[str, set[str]] = {}
    for path in MODULES:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):     # trt.A.B and its inner trt.A: both seen
                chain = _chain(node)
                for name in chain or []:
                    if not (name.startswith("__") and name.endswith("__")):
                        out.setdefault(name, set()).add(f"{path.name}:{node.lineno}")
    return out


def test_the_list_is_tensorrt_11s_and_tells_removed_names_apart():
    names = listed()
    assert "tensorrt_cu12_bindings-11." in API.read_text().splitlines()[0]
    for there in ("STRONGLY_TYPED", "mark_debug", "mark_unfused_tensors_as_debug_tensors",
                  "set_tensor_debug_state", "IDebugListener", "process_debug_tensor"):
        assert in_api(there, names), there
    assert not in_api("OBEY_PRECISION_CONSTRAINTS", names) and not in_api("FP16", names)


def test_every_tensorrt_attribute_the_code_uses_exists_in_tensorrt_11():
    names = listed()
    found = uses()
    assert len(MODULES) >= 2 and {"STRONGLY_TYPED", "mark_debug", "set_tensor_debug_state"} <= set(found)
    missing = {n: sorted(w) for n, w in found.items() if not in_api(n, names)}
    assert not missing, f"not in TensorRT 11's Python API: {missing}"


def test_no_weakly_typed_api_is_used():
    for path in MODULES:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert node.attr not in REMOVED, f"{path.name}:{node.lineno}: {node.attr}"
                on_trt = isinstance(node.value, ast.Name) and node.value.id in TRT_OBJECTS
                assert not (on_trt and node.attr in ("precision", "set_output_type")), \
                    f"{path.name}:{node.lineno}: per-layer precision ({node.attr})"
