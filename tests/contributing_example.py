"""The worked example of docs/contributing.md ("Adding a report kind"), run from the page itself:
its ``# file: NAME`` blocks written as modules, its other Python blocks run in order, and the
``text`` block it shows as printed. Used by the unit test and the browser test of the example."""
from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "contributing.md"
MODULES = ("doctor_model", "doctor_view")


def example_blocks() -> tuple[dict[str, str], list[str], str | None]:
    """The section's files (name -> source), its scripts, and the first ``text`` block."""
    text = DOCS.read_text()
    m = re.search(r"^## Adding a report kind\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"{DOCS}: no section '## Adding a report kind'"
    files, scripts, printed = {}, [], None
    for lang, body in re.findall(r"^```(\w+)\n(.*?)^```", m.group(1), re.M | re.S):
        first = body.splitlines()[0]
        if lang == "python" and first.startswith("# file: "):
            files[first[len("# file: "):].strip()] = body
        elif lang == "python":
            scripts.append(body)
        elif lang == "text" and printed is None:
            printed = body
    return files, scripts, printed


@contextlib.contextmanager
def run_example(folder: Path):
    """Write the example's modules into ``folder``, run its scripts; yields (namespace, stdout,
    the text the page shows). The caller keeps the registrations apart (a scratch registry)."""
    files, scripts, printed = example_blocks()
    assert set(files) == {f"{m}.py" for m in MODULES} and scripts and printed, (sorted(files), len(scripts))
    for name, body in files.items():
        (folder / name).write_text(body)
    sys.path.insert(0, str(folder))
    ns: dict = {"__name__": "doctor_example"}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            for s in scripts:
                exec(compile(s, str(DOCS), "exec"), ns)
        yield ns, out.getvalue(), printed
    finally:
        sys.path.remove(str(folder))
        for mod in MODULES:
            sys.modules.pop(mod, None)
