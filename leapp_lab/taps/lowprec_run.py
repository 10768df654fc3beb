"""``verify --expected``'s re-run of MODEL.py, in a child process of its own (docs/safety.md,
"Code execution").

The user's code runs where leapp_lab cannot see it end otherwise: ``os._exit(0)`` at import, an
``abort()`` or a crash in a native kernel would end the verify itself (exit 0 and no output was
seen). In a child, the parent sees a process that ended without a result, and refuses (exit 2)
naming the file. The child:

* starts with ``-P`` (Python 3.11+; on 3.10 the bootstrap drops the working folder's entry first):
  the working folder is not on ``sys.path``, so nothing in it is imported (MODEL.py's own folder
  is, as for prepare, by ``loader.load_module``);
* reads MODEL.py once, checks the bytes against the sha256 prepare recorded, and executes those
  bytes (``lowprec_values(source=...)``): a file replaced after the check never runs;
* writes ``values.npz`` and then ``result.json`` into the folder the parent made; no
  ``result.json`` means the process ended early.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

import numpy as np

from leapp_lab.model.errors import UnusableInput

RESULT = "result.json"
STARTED = "started"          # written by the child before any user code runs
VALUES = "values.npz"
ROW_FIELDS = ("name", "kind", "tensor", "reference_source")

# the child's bootstrap: its working folder stays off sys.path (-P from Python 3.11; before, the ''
# that -c puts first is dropped before anything is imported from it); leapp_lab's own folder is
# appended, not prepended, for a checkout that is not installed (an installed one comes first)
_BOOT = ("import sys\n"
         "if sys.path and sys.path[0] == '':\n    del sys.path[0]\n"
         "sys.path.append({root!r})\n"
         "from leapp_lab.taps.lowprec_run import child_main\nsys.exit(child_main({req!r}))\n")
_SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []


def changed_line(path: Path, record: Path) -> str:
    return (f"{path}: changed since prepare (its sha256 is not the one {record} recorded); --expected "
            f"runs only the exact file prepare executed: re-run prepare, or verify without --expected")


def run_lowprec(model_file: Path, sha256: str, record: Path, dtype: str, rows: list[Any], *,
                reference: Mapping[str, np.ndarray], inputs_npz: Path | None,
                requested_taps: list[str] | None, exporter: str,
                forced: Mapping[str, np.ndarray] | None = None):
    """``lowprec_values`` of ``model_file`` (whose bytes must have ``sha256``, as ``record``, the
    prepare report, says) in a child process. ``reference``: the reference arrays of the model
    outputs. ``forced``: manual taps' references for the teacher-forced runs (``lowprec_values``).
    Returns LowPrecRuns; raises ExpectedUnavailable (the verify goes on without expected
    drift) or UnusableInput naming the file (changed, or its code ended the process)."""
    from leapp_lab.model.jsonio import load_npz, save_npz

    from .lowprec import ExpectedUnavailable, LowPrecRuns

    import leapp_lab
    from leapp_lab.signals import signals_deferred
    work = None
    try:
        with signals_deferred():    # a Ctrl-C cannot land between the mkdir and the name's keeper
            work = Path(tempfile.mkdtemp(prefix="leapp_lab_expected_"))
        save_npz(work / "reference.npz", dict(reference))
        if forced:
            save_npz(work / "forced.npz", dict(forced))
        req = work / "request.json"
        req.write_text(json.dumps({
            "model": str(model_file), "sha256": sha256, "dtype": dtype,
            "rows": [{k: getattr(r, k, None) for k in ROW_FIELDS} for r in rows],
            "reference": str(work / "reference.npz"),
            "inputs": None if inputs_npz is None else str(inputs_npz),
            "requested_taps": list(requested_taps or []), "exporter": exporter, "result": str(work),
            "forced": str(work / "forced.npz") if forced else None}))
        boot = _BOOT.format(root=str(Path(leapp_lab.__file__).resolve().parent.parent), req=str(req))
        proc = subprocess.run([sys.executable, *_SAFE_PATH, "-c", boot], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        said = proc.stdout.decode("utf-8", "replace")
        if not (work / STARTED).is_file():     # leapp_lab itself did not start there: not the model's doing
            raise ExpectedUnavailable(f"the process that re-runs the model could not start "
                                      f"({_how(proc.returncode)}){_last(said)}")
        if not (work / RESULT).is_file():
            raise UnusableInput(_ended(model_file, proc.returncode, said))
        res = json.loads((work / RESULT).read_text())
        status, message = res.get("status"), res.get("message") or ""
        if status == "changed":
            raise UnusableInput(changed_line(model_file, record))
        if status == "exited":
            raise UnusableInput(f"{message} (--expected re-ran it, and needs it to return; or verify "
                                f"without --expected)")
        if said.strip():          # the user's prints and torch's warnings, as when it ran in-process
            sys.stderr.write(said if said.endswith("\n") else said + "\n")
        if status == "unavailable":
            raise ExpectedUnavailable(message)
        if status != "ok":
            raise ExpectedUnavailable(f"re-running {model_file} failed: {message}")
        arrays = load_npz(work / VALUES)
        out = LowPrecRuns(dtype, reasons=dict(res.get("reasons") or {}))
        for i, (name, n) in enumerate(res.get("values") or []):
            out.values[name] = [arrays[f"{i}_{j}"] for j in range(n)]
        for i, (name, n) in enumerate(res.get("local") or []):
            out.local[name] = [arrays[f"L{i}_{j}"] for j in range(n)]
        return out
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _how(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def _last(said: str) -> str:
    last = [ln.strip() for ln in said.splitlines() if ln.strip()]
    return f"; its last output: {last[-1][:200]!r}" if last else ""


def _ended(model_file: Path, rc: int, said: str) -> str:
    """The one line for a child that ran the user's code and ended without a result."""
    return (f"{model_file}: the process that --expected re-ran it in ended before giving a result "
            f"({_how(rc)}: os._exit(), an abort or a crash at import or in forward()){_last(said)}; "
            f"--expected needs "
            f"a MODEL.py that returns: keep script code under `if __name__ == \"__main__\":`, or verify "
            f"without --expected")


# -- the child --------------------------------------------------------------------------------------

def child_main(request: str) -> int:
    req = json.loads(Path(request).read_text())
    work = Path(req["result"])
    (work / STARTED).touch()
    answer = _child(req)
    tmp = work / (RESULT + ".tmp")
    tmp.write_text(json.dumps(answer))
    os.replace(tmp, work / RESULT)     # last: a result.json is a complete answer
    return 0


def _child(req: dict) -> dict:
    from leapp_lab.model.jsonio import load_npz, save_npz

    from .errors import UserExit, first_line
    from .loader import source_digest
    from .lowprec import ExpectedUnavailable, lowprec_values

    path = Path(req["model"])
    try:
        data = path.read_bytes()
    except OSError:
        return {"status": "changed"}
    if source_digest(data) != req["sha256"]:
        return {"status": "changed"}
    try:
        runs = lowprec_values(path, req["dtype"], [SimpleNamespace(**r) for r in req["rows"]],
                              inputs=load_npz(req["inputs"]) if req["inputs"] else None,
                              reference=load_npz(req["reference"]),
                              requested_taps=req["requested_taps"], exporter=req["exporter"], source=data,
                              forced=load_npz(req["forced"]) if req.get("forced") else None)
    except ExpectedUnavailable as exc:
        return {"status": "unavailable", "message": str(exc)}
    except UserExit as exc:
        return {"status": "exited", "message": first_line(exc)}
    except SystemExit as exc:
        return {"status": "exited", "message": f"{path}: called sys.exit({exc.code!r}) while --expected re-ran it"}
    except Exception as exc:  # noqa: BLE001 - user code ran: whatever it raised, the verify goes on
        return {"status": "failed", "message": f"{type(exc).__name__}: {first_line(exc)}"}
    arrays, names = {}, []
    for i, (name, vals) in enumerate(runs.values.items()):
        names.append([name, len(vals)])
        arrays.update({f"{i}_{j}": np.asarray(v) for j, v in enumerate(vals)})
    local = []
    for i, (name, vals) in enumerate(runs.local.items()):
        local.append([name, len(vals)])
        arrays.update({f"L{i}_{j}": np.asarray(v) for j, v in enumerate(vals)})
    save_npz(Path(req["result"]) / VALUES, arrays)
    return {"status": "ok", "values": names, "reasons": runs.reasons, "local": local}
