"""The deep-check sections of a graph: replay, parity, adapters, exporters, isolation.

Each is a plain dataclass of its own module (``model/replay.py``, ``parity.py``, ``adapters.py``,
``exporters.py``, ``isolation.py``). A section is saved as ``<name>.json`` (plus ``<name>.npz``
when it keeps arrays) in the graph's run folder, beside ``report.json``, and is read back lazily
by ``GraphReport.<name>`` (so ``leapp_lab.load`` gives it back without any extra call).

Every section says where it stands in ``status``:

- ``ok``: it ran and found nothing wrong (for exporters / isolation: the runs completed);
- ``diverged``: it ran and the exported pipeline (or an adapter) disagrees with the Python;
- ``failed``: the check itself could not finish (``reason`` holds the error);
- ``unavailable``: it cannot run for this graph (``reason`` says why and what to do);
- ``skipped``: it was not asked for.

One section failing never stops the others.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from .jsonio import load_npz, read_json, save_npz, write_json
from .safepaths import check_input_file, present, staged

SECTION_NAMES = ("replay", "parity", "adapters", "exporters", "isolation")
STATUSES = ("ok", "diverged", "failed", "unavailable", "skipped")
_MODULES = {name: f"leapp_lab.model.{name}" for name in SECTION_NAMES}
_CLASSES: dict[str, type] = {}

#: how to ask for each check (the reason of a "skipped" section)
HOW_TO_ASK = {
    "replay": "not requested: leapp_lab.replay(report), --replay N",
    "parity": "not requested: leapp_lab.parity(report, step_fn), --parity N with --step-fn",
    "adapters": "the session had no leapp.FunctionPatch in patching=",
    "exporters": "not requested: leapp_lab.exporters(report, body), --exporters all|NODE",
    "isolation": "not requested: leapp_lab.isolate(report, body), --isolate",
}


def register_section(cls: type) -> type:
    _CLASSES[cls.section] = cls
    return cls


def section_class(name: str) -> type:
    if name not in _MODULES:
        raise KeyError(f"no deep-check section {name!r}; sections: {', '.join(SECTION_NAMES)}")
    if name not in _CLASSES:
        importlib.import_module(_MODULES[name])
    return _CLASSES[name]


def section_from_dict(name: str, data: dict[str, Any]):
    return section_class(name).from_dict(data)


def make(name: str, status: str, reason: str | None = None, **fields):
    """A section with only a status and a reason (skipped / unavailable / failed)."""
    if status not in STATUSES:
        raise ValueError(f"section status must be one of {STATUSES}, got {status!r}")
    return section_class(name)(status=status, reason=reason, **fields)


def skipped(name: str, reason: str | None = None):
    return make(name, "skipped", reason or HOW_TO_ASK[name])


def load_section(run_dir: str | Path | None, name: str):
    """The section saved in a run folder, or None when there is none."""
    if not run_dir:
        return None
    p = Path(run_dir) / f"{name}.json"
    if not present(p):
        return None
    d = read_json(p)
    if not isinstance(d, dict):
        raise ValueError(f"{p}: not a {name} section (expected an object)")
    sec = section_from_dict(name, d)
    npz = Path(run_dir) / f"{name}.npz"
    if present(npz):
        sec._arrays_path = check_input_file(npz, f"the arrays of the {name} section (an .npz file)")
    return sec


def save_section(graph: Any, section: Any, arrays: dict | None = None) -> Any:
    """Attach ``section`` to ``graph`` and write it into the graph's run folder: ``<name>.npz`` and
    ``<name>.json`` are written completely to temporary siblings and renamed into place together,
    so a full disk or Ctrl-C leaves the run as it was (never an npz without its json, never a
    half file). A graph without a run folder keeps it in memory only."""
    name = section.section
    graph.sections[name] = section
    if graph.run_dir and Path(graph.run_dir).is_dir():
        run = Path(graph.run_dir)
        finals = [run / f"{name}.json"] + ([run / f"{name}.npz"] if arrays else [])
        with staged(finals) as tmps:
            if arrays:
                save_npz(tmps[1], arrays)
            write_json(tmps[0], section.to_dict())
        if arrays:
            section._arrays_path = finals[1]
            section._arrays = dict(arrays)
    elif arrays:
        section._arrays = dict(arrays)
    return section


class SectionBase:
    """Shared behaviour of the section dataclasses (each also ``Plain``)."""

    section = ""
    _arrays_path: Path | None = None
    _arrays: dict | None = None

    @property
    def ok(self) -> bool:
        return getattr(self, "status", None) == "ok"

    def arrays(self) -> dict:
        """The section's arrays (``<name>.npz``), loaded on first use, never unpickled."""
        if self._arrays is None:
            self._arrays = load_npz(self._arrays_path) if self._arrays_path else {}
        return self._arrays
