"""Write tests/data/tensorrt11_api.txt: the names TensorRT 11's Python bindings define, read from the
bindings wheel without loading it (its module needs libnvinfer, which only NVIDIA's index serves).

    pip download --no-deps 'tensorrt-cu12-bindings==11.*' -d /tmp/trt
    python scripts/tensorrt_api_names.py /tmp/trt/tensorrt_cu12_bindings-*.whl > tests/data/tensorrt11_api.txt

The compiled module (pybind11) holds every Python name it registers as a C string; the package's
``__init__.py`` adds a few in Python (``nptype``...). The linker stores a string that ends another
one only once, as that one's tail ("mark_debug" lives in "unmark_debug", "Logger" in "ILogger"), so
the test accepts a name that is a listed name or the tail of one.
"""
from __future__ import annotations

import ast
import re
import sys
import zipfile

IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{1,63}")


def names(wheel: str) -> tuple[str, list[str]]:
    with zipfile.ZipFile(wheel) as z:
        so = next(n for n in z.namelist() if n.endswith(".so") and "/tensorrt" in n)
        init = next(n for n in z.namelist() if n.endswith("tensorrt_bindings/__init__.py"))
        blob = z.read(so)
        py = z.read(init).decode()
    out = set()
    # the C strings: runs of printable bytes between NULs that are whole identifiers
    for chunk in blob.split(b"\0"):
        if IDENT.fullmatch(chunk) and not chunk.startswith((b"_Z", b"_GLOBAL")):
            out.add(chunk.decode())
    for node in ast.walk(ast.parse(py)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.col_offset == 0:
            out.add(node.name)
        elif isinstance(node, ast.Assign) and node.col_offset == 0:
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return so, sorted(out)


def main(argv: list[str]) -> int:
    wheel = argv[1]
    so, listed = names(wheel)
    print(f"# The Python names of TensorRT's bindings, from {wheel.rsplit('/', 1)[-1]}")
    print(f"# ({so} and tensorrt_bindings/__init__.py, read without loading them) by")
    print("# scripts/tensorrt_api_names.py; see its docstring. A name stored as the tail of a longer")
    print("# one (linker string merging) counts as listed. One name a line.")
    print("\n".join(listed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
