"""Open a build (a ``build/model.<engine>/`` folder or its ``.tgz``) for verify."""
from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path

from leapp_lab.model.build import BUILD_FILE, SAMPLE_OUTPUTS, BuildReport
from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.fieldcheck import check_fields
from leapp_lab.model.jsonio import read_json
from leapp_lab.model.safepaths import check_input_file, check_input_path, present
from leapp_lab.signals import signals_deferred

from .buildtgz import check_room, extract_planned, plan_extraction
from .npzio import NpzInputError


class OpenBuild:
    """``with OpenBuild(path) as b: b.folder, b.report (BuildReport or None), b.sample_outputs``.
    A .tgz is extracted to a temporary folder (removed on exit): only the files the build needs,
    each of the size build.json records (``buildtgz``); errors name ``BUILD.tgz:member``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._tmp: str | None = None
        self._splits: dict = {}         # ONNX file -> onnx_split.SplitModel (onnx_split)
        if not self.path.exists():
            raise NpzInputError(f"{self.path}: no such build (a build/model.<engine>/ folder or .tgz "
                                f"written by leapp-lab compile){_unbuilt_hint(self.path)}")
        try:
            check_input_path(self.path, "a build folder or .tgz")
        except UnusableInput as exc:
            raise NpzInputError(str(exc)) from None
        try:
            self._open()
        except BaseException as exc:  # Ctrl-C during the extraction included: no folder left in /tmp
            self._rename(exc)
            self.close()
            raise

    def _open(self) -> None:
        if self.path.is_file():
            if not tarfile.is_tarfile(self.path):
                raise NpzInputError(f"{self.path}: not a build folder and not a .tgz archive{_hint(self.path)}")
            with signals_deferred():   # made and recorded for close() as one step (leapp_lab.signals)
                self._tmp = tempfile.mkdtemp(prefix="leapp-lab-build-")
            try:
                with tarfile.open(self.path, "r:*") as tf:
                    plan = plan_extraction(tf, self.path)       # headers only: nothing written yet
                check_room(self.path, plan, self._tmp)
                with tarfile.open(self.path, "r:*") as tf:
                    extract_planned(tf, plan, Path(self._tmp), self.path)
            except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                raise NpzInputError(f"{self.path}: unreadable build archive ({type(exc).__name__}: "
                                    f"{exc}); it may be truncated: compile it again") from None
            self.folder = Path(self._tmp)
        else:
            self.folder = self.path
            for name in (SAMPLE_OUTPUTS, BUILD_FILE):    # a FIFO, a device, a dangling link: named, never opened
                if present(self.folder / name):
                    try:
                        check_input_file(self.folder / name, "a file of a build")
                    except UnusableInput as exc:
                        raise NpzInputError(str(exc)) from None
        self.sample_outputs = self.folder / SAMPLE_OUTPUTS
        if not self.sample_outputs.is_file():
            what = ("a run folder (it holds report.json)" if (self.folder / "report.json").is_file() else
                    "a runs folder (it holds 'latest')" if (self.folder / "latest").is_file() else None)
            if what is not None and not (self.folder / BUILD_FILE).exists():
                # a run is not a build: "re-run compile" would send the user the wrong way
                raise NpzInputError(f"{self.path}: {what}, not a build; verify takes the build folder "
                                    f"compile wrote (e.g. build/model.ort), which a verify run's "
                                    f"report.json names (field 'build')")
            raise NpzInputError(f"{self.path}: no {SAMPLE_OUTPUTS} in this build; re-run leapp-lab compile")
        self.report: BuildReport | None = None
        if (self.folder / BUILD_FILE).is_file():
            try:
                d = read_json(self.folder / BUILD_FILE)
                if isinstance(d, dict) and d.get("kind") == BuildReport.kind:
                    check_fields(BuildReport, d, f"{self.path}: {BUILD_FILE}")
                self.report = BuildReport.read(self.folder)
            except UnusableInput as exc:
                raise NpzInputError(str(exc)) from None
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise NpzInputError(f"{self.path}: {BUILD_FILE} is unusable ({exc})") from None
            self.report.path = self.path

    def onnx_split(self, path: Path):
        """The ONNX file ``path`` split into graph and weights (``engines.onnx_split``), read once
        per open build: the accuracy graph and teacher forcing share it, and neither parses a weight."""
        key = str(path)
        if key not in self._splits:
            from leapp_lab.onnxio.split import load_split
            self._splits[key] = load_split(path)
        return self._splits[key]

    @property
    def name(self) -> str:
        n = self.path.name
        for suf in (".tgz", ".tar.gz"):
            if n.endswith(suf):
                return n[: -len(suf)]
        return n

    def close(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if exc is not None:
            self._rename(exc)
        self.close()

    def _rename(self, exc: BaseException) -> None:
        """An error that names a file of the extraction folder names it as the user knows it,
        ``BUILD.tgz:member`` (the temporary folder is gone by the time the message is read)."""
        if not self._tmp:
            return
        tmp = str(self._tmp)
        if isinstance(exc, OSError) and exc.filename is not None and tmp in str(exc.filename):
            exc.filename = str(exc.filename).replace(tmp + os.sep, f"{self.path}:").replace(tmp, str(self.path))
        elif exc.args and isinstance(exc.args[0], str) and tmp in exc.args[0]:
            text = exc.args[0].replace(tmp + os.sep, f"{self.path}:").replace(tmp, str(self.path))
            exc.args = (text, *exc.args[1:])


def _hint(path: Path) -> str:
    """What the user probably meant when BUILD is some other file."""
    if path.suffix == ".npz":
        return ("; verify takes REFERENCE.npz first, then the build folder (did you swap them?): "
                "leapp-lab verify build/model.reference.npz build/model.ort")
    if path.suffix == ".onnx":
        return (f"; compile it first (leapp-lab compile {path} --engine ort), then verify against the "
                f"build folder it writes ({path.with_suffix('')}.ort)")
    return ""


def _unbuilt_hint(path: Path) -> str:
    """A missing BUILD named as compile names it (``<stem>.<engine>[.tgz]``) beside ``<stem>.onnx``:
    verify before compile; the compile line that writes it."""
    archive = path.name.endswith(".tgz")
    base = Path(path.name[:-4] if archive else path.name)
    onnx = path.with_name(base.stem + ".onnx")
    if not base.suffix or not onnx.is_file():
        return ""
    import shlex
    return (f"; not built yet: leapp-lab compile {shlex.quote(str(onnx))} --engine {base.suffix[1:]}"
            f"{' --archive' * archive}, then verify again")
