"""No egress: nothing leapp_lab runs sends anything off the machine or leaves files it did not name.

onnxruntime's official wheels (1.32) carry Microsoft's 1DS telemetry in the native library. Measured
with ``strace -f`` on a bare session (docs/safety.md, "No egress"): loading the library writes
``$XDG_CACHE_HOME`` (``~/.cache``) ``/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db}``
and ``$TMPDIR/.ses``, and about 9 s later, every few seconds, it resolves
``mobile.events.data.microsoft.com`` through the machine's resolver to upload the queued events.

What stops it, measured the same way:

* ``ORT_DISABLE_TELEMETRY=1`` in the environment **before the library loads** (``import onnxruntime``):
  no file, no DNS query, no connect. ``1``, ``true``, ``yes`` worked; ``0``, ``false``, ``2`` and the
  empty string leave telemetry on. Set after ``import onnxruntime`` (even before the first session) it
  does nothing: the library reads it once, at load.
* ``onnxruntime.disable_telemetry_events()`` after the import stopped neither the files nor the DNS
  queries; onnxruntime documents it as suppressing non-essential events only.

So ``import leapp_lab`` (the CLI, the API, ``%load_ext leapp_lab``, a pool or Dask worker importing a
sweep task: all go through the package's ``__init__``) sets the variable first (``quiet_environment``);
child processes (the fork server, pool workers, a LocalCluster started afterwards) inherit it. Where
sessions are made, ``quiet_sessions`` also calls ``disable_telemetry_events()`` and warns, once, when
onnxruntime was loaded before leapp_lab with telemetry on: that process cannot be quieted any more.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any

ORT_TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"
#: values of ORT_TELEMETRY_ENV that turned onnxruntime 1.32's telemetry off (case-insensitive, measured)
_OFF_VALUES = ("1", "true", "yes")
#: the native module: once it is in sys.modules the library has loaded and read the environment
_ORT_NATIVE = "onnxruntime.capi.onnxruntime_pybind11_state"

#: True when onnxruntime was already loaded, telemetry on, when leapp_lab was imported (set below)
ort_loaded_first = False
_sessions_quiet = False


def telemetry_disabled_by(value: str | None) -> bool:
    """Whether this value of ``ORT_DISABLE_TELEMETRY`` turns onnxruntime's telemetry off."""
    return value is not None and value.strip().lower() in _OFF_VALUES


def quiet_environment() -> None:
    """Turn dependencies' telemetry off for this process and every child it starts. Run at
    ``import leapp_lab``, before anything of leapp_lab can import onnxruntime. A value that leaves
    telemetry on (``0``, empty) is overridden: a debugging tool never phones home."""
    global ort_loaded_first
    if _ORT_NATIVE in sys.modules and not telemetry_disabled_by(os.environ.get(ORT_TELEMETRY_ENV)):
        ort_loaded_first = True
    os.environ[ORT_TELEMETRY_ENV] = "1"


def quiet_sessions(ort: Any) -> None:
    """Before this process's first onnxruntime session: the non-essential events off too, and,
    where onnxruntime loaded before leapp_lab with telemetry on, one warning saying how to avoid
    it (the variable is read only when the library loads)."""
    global _sessions_quiet
    if _sessions_quiet:
        return
    _sessions_quiet = True
    try:
        ort.disable_telemetry_events()
    except Exception:  # noqa: BLE001 - an onnxruntime without the call: the variable is what counts
        pass
    if ort_loaded_first:
        warnings.warn(
            "onnxruntime was imported before leapp_lab with its telemetry on: in this process it keeps "
            "writing ~/.cache/Microsoft/DeveloperTools/.onnxruntime and $TMPDIR/.ses and sending events "
            f"to Microsoft. Set {ORT_TELEMETRY_ENV}=1 in the environment (or import leapp_lab first) "
            "and restart the process or kernel (docs/safety.md, 'No egress').",
            RuntimeWarning, stacklevel=3)
