"""The front-end's ES modules (extensions/src/) and the one bundle both hosts inline
(extensions/leapp_view.js): the committed bundle is what the pinned esbuild makes of the sources,
the JS unit tests (extensions/test/, node's own test runner) pass, and the bundle exports what the
widget and the offline report call. docs/contributing.md, "Front-end modules"."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "extensions"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(
    NODE is None, reason="node is not installed (scripts/install.sh --dev installs Debian's nodejs and npm)")


def _esbuild_ready() -> None:
    """The pinned esbuild is installed in extensions/node_modules (else: one line saying what to run)."""
    pinned = json.loads((EXT / "package.json").read_text(encoding="utf-8"))["devDependencies"]["esbuild"]
    installed = EXT / "node_modules" / "esbuild" / "package.json"
    if not installed.is_file():
        pytest.fail(f"esbuild is not installed in {EXT / 'node_modules'}: run `npm ci` in extensions/ "
                    "(scripts/install.sh --dev does)", pytrace=False)
    have = json.loads(installed.read_text(encoding="utf-8"))["version"]
    if have != pinned:
        pytest.fail(f"extensions/node_modules has esbuild {have}, package.json pins {pinned}: run `npm ci` in "
                    "extensions/", pytrace=False)


@needs_node
def test_committed_bundle_is_the_build_of_the_sources(tmp_path):
    _esbuild_ready()
    out = tmp_path / "leapp_view.js"
    res = subprocess.run([NODE, str(EXT / "build.mjs"), "--outfile", str(out)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    built, committed = out.read_bytes(), (EXT / "leapp_view.js").read_bytes()
    assert built == committed, ("extensions/leapp_view.js is not the build of extensions/src/: run "
                                "`npm run build` in extensions/ and commit the bundle with the sources")


@needs_node
def test_js_unit_tests_pass():
    files = sorted(str(p) for p in (EXT / "test").glob("*.test.js"))
    assert len(files) >= 6, files
    res = subprocess.run([NODE, "--test", "--test-reporter=tap", *files], cwd=EXT,
                         capture_output=True, text=True, timeout=300)
    counts = {k: int(v) for k, v in re.findall(r"^# (pass|fail|cancelled) (\d+)$", res.stdout, re.M)}
    failed = [line for line in res.stdout.splitlines() if line.lstrip().startswith("not ok")]
    assert res.returncode == 0 and counts.get("fail") == 0 and counts.get("cancelled", 0) == 0, \
        "\n".join(failed) + "\n" + res.stdout[-4000:] + res.stderr[-2000:]
    assert counts["pass"] >= 25, counts


@needs_node
def test_bundle_exports_what_the_hosts_call(tmp_path):
    """The offline report calls ``renderView`` at the module's top level; anywidget takes the default
    export's ``render``; ``fmt`` is the number format test_numfmt.py compares with Python's."""
    mod = tmp_path / "view.mjs"
    shutil.copy(EXT / "leapp_view.js", mod)
    probe = tmp_path / "probe.mjs"
    probe.write_text(
        f"const m = await import({json.dumps(mod.as_uri())});\n"
        "console.log(JSON.stringify({exports: Object.keys(m).sort(), render: typeof m.default.render,"
        " renderView: typeof m.renderView, fmt: m.fmt(12345.6, 'num')}));\n", encoding="utf-8")
    res = subprocess.run([NODE, str(probe)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert got == {"exports": ["binEdge", "default", "fmt", "parseQuery", "renderDeep", "renderView", "tableCsv"],
                   "render": "function", "renderView": "function", "fmt": "1.235e+04"}
    # a top-level function, not only an export: the report's boot script names it in the same module
    assert re.search(r"^function renderView\(", (EXT / "leapp_view.js").read_text(encoding="utf-8"), re.M)
