"""The report base shared by every run kind (trace, verify, ...).

A report is a plain dataclass with a ``kind`` and a ``schema_version``. ``save(dir)`` writes
``report.json`` (strict JSON) plus any arrays as uncompressed npz beside it; ``leapp_lab.load(dir)``
reads ``report.json`` and dispatches on ``kind`` to the registered class. Views only read reports.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from .dc import Plain
from .errors import MissingInput, UnusableInput
from .fieldcheck import check_fields
from .jsonio import read_json, write_json

SCHEMA_VERSION = 1
REPORT_FILE = "report.json"
# A build folder's report is build.json (its name is part of the compile contract); load() opens
# both, so any run folder a user has in hand can be reopened the same way.
REPORT_FILES = (REPORT_FILE, "build.json")

_KINDS: dict[str, type["Report"]] = {}


def register(cls: type["Report"]) -> type["Report"]:
    """Class decorator: make ``load`` dispatch ``cls.kind`` to ``cls``."""
    if not getattr(cls, "kind", None):
        raise TypeError(f"{cls.__name__} has no kind")
    _KINDS[cls.kind] = cls
    return cls


class Report:
    """Mixin for report dataclasses.

    Subclasses (also ``Plain`` dataclasses) set ``kind``; they override ``to_dict()`` /
    ``from_dict(d, path)`` only to add to the fields' round trip; arrays are written
    by ``_save_arrays(dir)`` and loaded lazily by the subclass from ``self.path``.
    """

    kind: ClassVar[str] = ""
    schema_version: ClassVar[int] = SCHEMA_VERSION
    #: the file ``save`` writes (a build folder's is build.json)
    report_file: ClassVar[str] = REPORT_FILE

    # -- to override where a report holds more than its fields ---------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The dataclass fields (the ``Plain`` mixin) without the transient ``path``."""
        d = Plain.to_dict(self)
        d.pop("path", None)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> "Report":
        d = {k: v for k, v in d.items() if k not in ("kind", "schema_version")}
        r = Plain.from_dict.__func__(cls, d)
        r.path = path
        return r

    def _found_at(self, folder: Path) -> None:
        """Loaded from its run folder ``folder``: paths of its own that the file records (where it
        was written, maybe on another machine, maybe crafted) give way to where it is now."""

    def _found_in_summary(self) -> None:
        """Loaded from a summary file (``run --json F``): the folders it records are kept only
        where they hold what the file says."""

    def _save_arrays(self, directory: Path) -> None:
        """Write npz files next to report.json (default: none)."""

    # -- shared --------------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:
        """What report.json (and a ``--json`` that writes the whole report) holds: kind, schema
        version, the fields, and the ``finding`` (written for readers; ``load`` computes it again)."""
        body = {"kind": self.kind, "schema_version": self.schema_version}
        body.update(self.to_dict())
        body["finding"] = self.finding
        return body

    # -- the finding: what the report says first (model/finding.py) -----------------------------
    @property
    def finding(self) -> str:
        """One to three sentences: the answer and the next step (the first lines of ``str(report)``,
        the ``[data-leapp-finding]`` element of every view, ``finding`` in report.json and --json)."""
        return self.finding_record().text

    def finding_record(self):
        """The ``leapp_lab.model.finding.Finding``: the text, its colour and the rows it names."""
        from .finding import finding_of
        return finding_of(self)

    def save(self, directory: str | os.PathLike) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._save_arrays(directory)
        write_json(directory / self.report_file, self.body())
        self.path = directory
        return directory

    # -- views ---------------------------------------------------------------------------------
    def _render(self, target: str, **opts: Any) -> Any:
        """Render this report for ``target`` (text, view, html, figure, ...): the model's one call
        into ``leapp_lab.views``, imported here on use (pandas' ``_repr_html_`` shape), so the model
        imports no view code and names no renderer; the registry picks one by ``kind``."""
        from leapp_lab.views import render
        return render(self, target, **opts)

    def __str__(self) -> str:
        return self._render("text")


class Viewable:
    """Display protocol of the reports that have an interactive view (trace, verify, compare,
    repair): the HTML page and the notebook display, rendered by the registry like every view."""

    def to_html(self, path=None):
        return self._render("html", path=path)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self._render("mimebundle", include=include, exclude=exclude)

    def _ipython_display_(self):
        # in a kernel: the static view and the widget as two outputs
        self._render("display")


def resolve_report_path(path: str | os.PathLike) -> Path:
    """Accept a run folder, its report.json, or a folder holding ``latest`` (a runs root)."""
    from .runs import latest_run, lab_dir

    p = Path(path)
    if p.is_file() and p.name in REPORT_FILES:
        return p.parent
    if any((p / f).is_file() for f in REPORT_FILES):
        return p
    from .safepaths import check_input_file, present
    for f in REPORT_FILES:      # a report.json that is a FIFO or a device: say what it is, never open it
        if os.path.lexists(p / f):
            check_input_file(p / f, "a report .json")
    if p.is_file():
        _not_a_report_file(p)
    for root in (p, lab_dir(p)):
        if (root / "latest").exists() and not (root / "latest").is_file():    # a FIFO named latest
            check_input_file(root / "latest", "a runs folder's 'latest' pointer")
        run = latest_run(root)
        if run is not None and present(run / REPORT_FILE):
            check_input_file(run / REPORT_FILE, "a report .json")   # the latest run's: say what it is
            return run
    if not p.exists():
        raise MissingInput(f"{p}: no such file or folder")
    raise MissingInput(
        f"{p}: no {REPORT_FILE} here, and no 'latest' run under it; pass a run folder "
        f"(…/leapp_lab/runs/<run id>) or the folder that holds 'latest'")


def _not_a_report_file(p: Path) -> None:
    """Refuse a regular file that is not a report (UnusableInput saying what it is and what to do)."""
    from .safepaths import is_build
    if is_build(p):
        raise UnusableInput(f"{p}: is a build archive (leapp-lab compile --archive), not a report; verify "
                            f"it (leapp-lab verify REFERENCE.npz {p}) and load that run, or extract it "
                            f"(tar xzf) and load the folder for its build.json")
    raise UnusableInput(f"{p}: is a file, not a run folder or a report .json; pass a run folder "
                        f"(…/leapp_lab/runs/<run id>), its report.json, or the folder that holds 'latest'")


def load(path: str | os.PathLike) -> Report:
    """Load any report from disk; dispatches on its ``kind``."""
    from .safepaths import check_input_path
    p = Path(path)
    if p.exists():
        check_input_path(p, "a run folder or a report .json")   # never open a FIFO or a device
    if p.is_file() and p.suffix == ".json" and p.name not in REPORT_FILES:
        # a report written under the user's own name (leapp-lab run --json F, verify --json F)
        run, file = p.parent, p
    else:
        run = resolve_report_path(path)
        file = next(run / f for f in REPORT_FILES if (run / f).is_file())
    d = read_json(file)
    if not isinstance(d, dict) or "kind" not in d:
        raise UnusableInput(f"{file}: not a leapp_lab report (no 'kind')")
    if not isinstance(d["kind"], str):
        raise UnusableInput(f"{file}: not a leapp_lab report ('kind' is {type(d['kind']).__name__}, not a name)")
    kind = d["kind"]
    _import_report_kinds(kind)
    cls = _KINDS.get(kind)
    if cls is None:
        if kind == "compare-rows":
            raise UnusableInput(
                f"{file}: this is the summary `--json` of a compare (no histograms, no per-sample "
                f"data); pass the compare run folder instead (it prints 'run folder: …')")
        if kind == "verify-rows":
            raise UnusableInput(
                f"{file}: this is the summary `leapp-lab verify --json` writes (no histograms, no "
                f"per-sample data); pass the verify run folder instead (verify prints 'run folder: …'; "
                f"by default the leapp_lab folder beside the build)")
        raise UnusableInput(f"{file}: unknown report kind {kind!r}; known: {sorted(_KINDS)}")
    ver = d.get("schema_version")
    if not isinstance(ver, int) or ver > cls.schema_version:
        raise UnusableInput(
            f"{file}: schema_version {ver!r} of kind {kind!r} is newer than this "
            f"leapp_lab understands ({cls.schema_version}); upgrade leapp_lab")
    check_fields(cls, d, str(file))
    try:
        report = cls.from_dict(d, run)
    except UnusableInput:       # a file the report refers to (a compare's side), already named
        raise
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        raise UnusableInput(f"{file}: malformed {kind} report ({type(exc).__name__}: {exc}); write it "
                            f"again with leapp_lab") from None
    report.path = run
    if file.name in REPORT_FILES:
        report._found_at(run)
    else:
        report._found_in_summary()
    return report


#: the report kinds leapp_lab defines, each registered by the module named after it (model.<kind>)
_KIND_MODULES = ("trace", "verify", "build", "prepare", "compare", "repair")


def _import_report_kinds(kind: str | None = None) -> None:
    """Import the module that registers ``kind``'s report class, or (None, an unknown kind) all of
    them. Lazy, and only the one needed: ``leapp-lab report`` of a verify run pays for no other."""
    import importlib

    for mod in (f"leapp_lab.model.{k}" for k in ((kind,) if kind in _KIND_MODULES else _KIND_MODULES)):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
