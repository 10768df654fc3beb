"""Reports open where LEAPP is absent: a teammate with only the report folder (no LEAPP, no torch)
can load, print and render it. The LEAPP version check lives in leapp_lab.trace, where LEAPP is used."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from viewfixtures import trace_report, verify_report

BLOCK = '''
import sys, importlib.abc, importlib.metadata as md
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("leapp", "torch", "onnxruntime", "onnx"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
sys.meta_path.insert(0, Block())
_version = md.version
def version(n):
    if n == "leapp":
        raise md.PackageNotFoundError(n)
    return _version(n)
md.version = version
'''


def test_reports_load_print_and_render_without_leapp(tmp_path):
    trace_report().save(tmp_path / "trace")
    verify_report().save(tmp_path / "verify")
    here = Path(__file__).parent
    code = BLOCK + f'''
sys.path[:0] = [{str(here.parents[1])!r}]
import leapp_lab
for d in ("trace", "verify"):
    r = leapp_lab.load({str(tmp_path)!r} + "/" + d)
    assert str(r) and r.to_html({str(tmp_path)!r} + f"/{{d}}.html")
    r.to_dataframe() if d == "verify" else r.validation.to_dataframe()
assert not [m for m in sys.modules if m.split(".")[0] in ("leapp", "torch", "onnxruntime", "onnx")]
try:
    import leapp_lab.trace
except ImportError as exc:
    print("TRACE:", exc)
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "trace.html").stat().st_size > 0 and (tmp_path / "verify.html").stat().st_size > 0
    # tracing itself needs LEAPP and says so
    assert "TRACE: leapp_lab needs LEAPP (PyPI 'leapp>=0.7.2,<0.8')" in out.stdout
