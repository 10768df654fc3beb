"""The import graph between leapp_lab's packages, read from the AST of every module.

Imports inside functions count (a lazy import is a dependency all the same). A node is a subpackage
(``model``, ``views``, ``compare`` ...) or a top-level module (``magics``, ``executor``); the root
``leapp_lab/__init__.py`` is the public facade, not a layer: ``import leapp_lab`` then
``leapp_lab.trace(...)`` is an edge to the package the facade's ``_LAZY`` table names for ``trace``.

The rules (DESIGN §2, issue 18; docs/contributing.md, "Package layout"): ``model`` imports no view
code but the display protocol's one lazy call (``Report._render``, pandas' ``_repr_html_`` shape);
the package graph has no cycle; no leaf package (``LEAVES``) imports another: a leaf imports only the
packages below it (``BELOW_LEAVES``), which import nothing above them, and only ``steps`` (and the
shells over it, ``cli`` and ``magics``) composes leaves.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "leapp_lab"

#: the one import of leapp_lab.views under leapp_lab/model: (module, function, imported module)
DISPLAY_CALL = ("leapp_lab.model.base", "_render", "leapp_lab.views")

#: the leaf packages: each does one thing and imports no other leaf (issue 18, "Steps above the
#: leaves"); what several of them need lies below them, what combines them is a step
LEAVES = ("taps", "engines", "compare", "trace", "deep")
#: what a leaf may import of leapp_lab: the packages below every leaf (model: the report data;
#: onnxio: ONNX files read and edited; numerics: the float64 metric pass and array checks; fxio: a
#: LEAPP node's traced FX graph saved and rebuilt) and the process-wide modules (egress, _compat,
#: signals: how Ctrl-C and SIGTERM unwind)
BELOW_LEAVES = ("model", "onnxio", "numerics", "fxio", "egress", "_compat", "signals")
#: each lower package and what it may import of leapp_lab (model: nothing but the display call and
#: signals, which imports nothing: its commits hold Ctrl-C back until every output is renamed)
LOWER = {"model": {"signals"}, "onnxio": {"model"}, "numerics": {"model"}, "fxio": {"model"}, "egress": set(),
         "_compat": set(), "signals": set()}
#: the packages that compose leaves (steps) and the shells over them (cli, magics)
ORCHESTRATORS = ("steps", "cli", "magics")


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _lazy_table() -> dict[str, str]:
    """The facade's ``_LAZY``: public name -> the module that defines it."""
    tree = ast.parse((PKG / "__init__.py").read_text())
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "_LAZY" for t in n.targets):
            return ast.literal_eval(n.value)
    raise AssertionError("leapp_lab/__init__.py has no _LAZY table")


def _node(module: str) -> str | None:
    """The graph node of a module of leapp_lab (None: outside leapp_lab, or the facade itself)."""
    parts = module.split(".")
    if parts[0] != "leapp_lab" or len(parts) == 1:
        return None
    return parts[1]


def _facade_name(name: str, lazy: dict[str, str]) -> str | None:
    """The node a name taken from the facade (``from leapp_lab import X``, ``leapp_lab.X``) is."""
    if (PKG / name).is_dir() or (PKG / f"{name}.py").is_file():
        return name
    if name in lazy:
        return _node(lazy[name])
    return None          # __version__, __file__: the facade's own


def _imports(path: Path, lazy: dict[str, str]):
    """(imported module, its node, enclosing function name or None) for each import in ``path``."""
    module, is_pkg = _module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    parents = {}
    for p in ast.walk(tree):
        for c in ast.iter_child_nodes(p):
            parents[c] = p

    def func(n):
        while n in parents:
            n = parents[n]
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return n.name
        return None

    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name == "leapp_lab":      # the facade: what the module reads off it
                    for m in ast.walk(tree):
                        if (isinstance(m, ast.Attribute) and isinstance(m.value, ast.Name)
                                and m.value.id == "leapp_lab"):
                            node = _facade_name(m.attr, lazy)
                            if node:
                                yield f"leapp_lab.{m.attr}", node, func(n)
                else:
                    yield a.name, _node(a.name), func(n)
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (n.level - 1)]
                target = ".".join(base + ([n.module] if n.module else []))
            else:
                target = n.module or ""
            if target == "leapp_lab":
                for a in n.names:
                    node = _facade_name(a.name, lazy)
                    if node:
                        yield f"leapp_lab.{a.name}", node, func(n)
            else:
                yield target, _node(target), func(n)


@functools.lru_cache(maxsize=1)
def _graph() -> tuple[dict[tuple[str, str], list[str]], list[tuple[str, str, str | None]]]:
    """Package edges (with where each import is) and the imports of views under model."""
    lazy = _lazy_table()
    edges: dict[tuple[str, str], list[str]] = {}
    model_views = []
    for path in sorted(PKG.rglob("*.py")):
        module, _ = _module_name(path)
        src = _node(module)
        if src is None:       # the facade
            continue
        for target, node, fn in _imports(path, lazy):
            if node is None or node == src:
                continue
            if src == "model" and node == "views":
                model_views.append((module, fn, target))
                if (module, fn, target) == DISPLAY_CALL:
                    continue  # the display protocol's one call: allowed, and not an edge
            edges.setdefault((src, node), []).append(f"{path.relative_to(PKG.parent)} ({target})")
    return edges, model_views


def _cycle_edges(edges) -> set[tuple[str, str]]:
    """The edges a -> b that lie on a cycle (b reaches a)."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)

    def reaches(x: str, goal: str) -> bool:
        seen, todo = set(), [x]
        while todo:
            y = todo.pop()
            if y == goal:
                return True
            if y not in seen:
                seen.add(y)
                todo.extend(succ.get(y, ()))
        return False

    return {(a, b) for a, b in edges if reaches(b, a)}


def test_model_imports_views_only_in_the_display_call():
    _, model_views = _graph()
    assert model_views == [DISPLAY_CALL], (
        "leapp_lab/model must not import leapp_lab.views (views read the model, not the other way): "
        "render through Report._render(target) and register the renderer in leapp_lab/views/registry.py; "
        f"found {model_views}")


def test_no_package_cycle():
    edges, _ = _graph()
    found = _cycle_edges(edges)
    assert not found, "import cycle between packages: " + "; ".join(
        f"{a} -> {b} via {', '.join(edges[(a, b)][:3])}" for a, b in sorted(found))


def test_no_leaf_package_imports_another():
    edges, _ = _graph()
    sideways = sorted((a, b) for a, b in edges if a in LEAVES and b in LEAVES)
    assert not sideways, (
        "a leaf package imports another (compose them in leapp_lab/steps, or move what both need below "
        "the leaves: model, onnxio, numerics): " + "; ".join(
            f"{a} -> {b} via {', '.join(edges[(a, b)][:3])}" for a, b in sideways))


def test_leaves_import_only_what_lies_below_them():
    edges, _ = _graph()
    up = sorted((a, b) for a, b in edges if a in LEAVES and b not in BELOW_LEAVES)
    assert not up, "a leaf package imports a package that is not below it: " + "; ".join(
        f"{a} -> {b} via {', '.join(edges[(a, b)][:3])}" for a, b in up)


def test_lower_packages_import_nothing_above_them():
    edges, _ = _graph()
    up = sorted((a, b) for a, b in edges if a in LOWER and b not in LOWER[a])
    assert not up, "a package below the leaves imports one above it: " + "; ".join(
        f"{a} -> {b} via {', '.join(edges[(a, b)][:3])}" for a, b in up)


def test_only_steps_and_its_shells_compose_leaves():
    """Any package that imports two or more leaves composes them: that is a step's job."""
    edges, _ = _graph()
    leaves_of: dict[str, set[str]] = {}
    for a, b in edges:
        if b in LEAVES:
            leaves_of.setdefault(a, set()).add(b)
    composers = sorted(a for a, bs in leaves_of.items() if len(bs) > 1 and a not in ORCHESTRATORS)
    assert not composers, "packages that compose several leaves outside steps: " + "; ".join(
        f"{a}: {sorted(leaves_of[a])}" for a in composers)
    assert {"taps", "engines", "compare", "trace", "deep"} <= leaves_of["steps"]


def test_the_graph_reader_sees_a_lazy_import_and_the_facade(tmp_path):
    """The reader itself: an import inside a function and a name read off the facade are edges
    (the cycle check would be blind without them)."""
    lazy = _lazy_table()
    mod = PKG / "model" / "base.py"
    assert any(t == "leapp_lab.views" and fn == "_render" for t, _, fn in _imports(mod, lazy))
    magics = list(_imports(PKG / "magics.py", lazy))
    assert ("leapp_lab.trace", "trace") in {(t, n) for t, n, _ in magics}     # leapp_lab.trace(...)
    assert _cycle_edges({("a", "b"): [], ("b", "c"): [], ("c", "a"): [], ("c", "d"): []}) == {
        ("a", "b"), ("b", "c"), ("c", "a")}
