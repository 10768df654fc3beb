"""The worked example of docs/contributing.md ("Adding a report kind"), run from the page itself:
its ``# file: NAME`` blocks written as modules, its other Python blocks run in order, and the
``text`` block it shows as printed; and its front-end module (``// file: src/views/doctor.js``,
section "Front-end modules") bundled with the others, registered as the page says. Used by the
unit test and the browser test of the example."""
from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "contributing.md"
EXT = DOCS.parents[1] / "extensions"
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


def example_js() -> tuple[str, str, str, str]:
    """(its path under extensions/, the module's source, the import line and the ``TABS`` entry that
    register it in src/tabs.js) of the page's front-end module."""
    m = re.search(r"^```js\n// file: (\S+)\n(.*?)^```", DOCS.read_text(), re.M | re.S)
    assert m, f"{DOCS}: no ```js block starting with '// file: src/views/...'"
    module, sep, registration = m.group(2).partition("// src/tabs.js")
    imp = re.search(r"^//\s+(import .*;)$", registration, re.M)
    entry = re.search(r"^//\s+(\w+: \w+,)$", registration, re.M)
    assert sep and imp and entry, "the block ends with its registration in src/tabs.js (an import, a TABS entry)"
    return m.group(1), module.rstrip() + "\n", imp.group(1), entry.group(1)


def bundle_with_example(folder: Path) -> str:
    """The renderer bundle with the page's front-end module added as the page says: a copy of
    extensions/src with the module written and registered in src/tabs.js, built by build.mjs and
    the pinned esbuild (extensions/node_modules). Returns the bundle's text."""
    node = shutil.which("node")
    if node is None or not (EXT / "node_modules" / "esbuild").is_dir():
        raise FileNotFoundError("the example's bundle needs node and esbuild: run `npm ci` in extensions/")
    path, module, imp, entry = example_js()
    ext = folder / "extensions"
    shutil.copytree(EXT / "src", ext / "src")
    for name in ("build.mjs", "package.json"):
        shutil.copy(EXT / name, ext / name)
    (ext / "node_modules").symlink_to(EXT / "node_modules", target_is_directory=True)
    assert not (ext / path).exists(), f"{path} exists already: the example adds a module of its own"
    (ext / path).write_text(module, encoding="utf-8")
    tabs = (ext / "src" / "tabs.js").read_text(encoding="utf-8")
    lines = tabs.splitlines(keepends=True)
    last_import = max(i for i, line in enumerate(lines) if line.startswith("import "))
    lines.insert(last_import + 1, imp + "\n")
    tabs = "".join(lines)
    end = tabs.rindex("};")                 # the end of the TABS object
    (ext / "src" / "tabs.js").write_text(tabs[:end] + "  " + entry + "\n" + tabs[end:], encoding="utf-8")
    out = folder / "leapp_view.js"
    res = subprocess.run([node, str(ext / "build.mjs"), "--outfile", str(out)], cwd=folder,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return out.read_text(encoding="utf-8")
