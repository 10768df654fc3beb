"""Every Python module of leapp_lab holds one concept in at most ``MAX_LINES`` lines (issue 18,
"Modules <= 400 lines"; docs/contributing.md, "Package layout").

A module that grows past it is split along its concepts (as ``model/verify.py`` became rows, rules,
storage and the report), not trimmed. Generated or vendored files are exempt, each listed in
``EXEMPT`` with why; leapp_lab has none today (the front-end bundle and the vendored dagre live in
``extensions/``, outside the package, and are rebuilt or pinned there).
"""
from __future__ import annotations

from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "leapp_lab"
MAX_LINES = 400
#: path relative to leapp_lab/ -> why it may be longer (generated or vendored code only)
EXEMPT: dict[str, str] = {}


def _lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def test_every_module_is_at_most_400_lines():
    stale = [rel for rel in EXEMPT if not (PKG / rel).is_file()]
    assert not stale, f"listed in EXEMPT but gone (remove their lines): {stale}"
    too_long = {str(p.relative_to(PKG)): n for p in sorted(PKG.rglob("*.py"))
                if str(p.relative_to(PKG)) not in EXEMPT and (n := _lines(p)) > MAX_LINES}
    assert not too_long, (f"modules over {MAX_LINES} lines (split each along its concepts into modules "
                          f"named for what they hold): {too_long}")


def test_the_line_count_is_the_file_s():
    """The counter counts what an editor shows (a last line without a newline counts too)."""
    assert _lines(PKG / "__init__.py") == len((PKG / "__init__.py").read_text().splitlines())
