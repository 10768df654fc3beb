"""Extract a ``.tgz`` build within bounds: only the files the build needs, each of the size it records.

A gzip of zeros inflates about 1000-fold, so a 1 MB archive can hold a 1 GiB member; extracting
whatever the archive holds would fill the temporary folder (docs/safety.md, "size bounds"). So the
archive is read in two passes. The first reads only the member headers (no data is written): every
member must be a plain file at the archive's top level (no link, device, folder, absolute path or
``..``), named by the build and of the size it records; ``build.json`` is read first (compile puts
it first) and says what the rest must be:

* a build compiled since ``build.json`` records ``files`` (name -> bytes): exactly those files, each
  of exactly that size;
* an older build: only the files a build has (``build.json``, ``sample_outputs.npz``,
  ``compile.log`` and the artifacts ``build.json`` names), each at most :data:`LEGACY_MEMBER_LIMIT`.

``cache.json`` (compile's reuse record, which ``build.json`` does not list: an archive of the whole
build folder holds it) is allowed, at most :data:`BUILD_JSON_LIMIT`, and never extracted: verify
does not read it. Anything else is refused naming ``BUILD.tgz:member``, before it is extracted (usually before its
data is even inflated). The second pass writes those members, and only those, after checking that
the temporary folder has room for all of them.
"""
from __future__ import annotations

import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from leapp_lab.model.build import BUILD_FILE, COMPILE_LOG, SAMPLE_OUTPUTS
from leapp_lab.model.reuse import CACHE_FILE
from leapp_lab.model.safepaths import is_file_name

from .npzio import NpzInputError

#: build.json is read into memory to learn what else the archive may hold: at most this many bytes
BUILD_JSON_LIMIT = 64 << 20
#: a member of a build compiled before build.json recorded its files' sizes: at most this many bytes
LEGACY_MEMBER_LIMIT = 4 << 30
#: what the temporary folder must keep free after the extraction
_ROOM_MARGIN = 64 << 20
_CHUNK = 1 << 20


@dataclass
class _Rules:
    sizes: dict[str, int | None]      # allowed name -> recorded size (None: any up to the legacy limit)
    recorded: bool                    # sizes come from build.json's ``files``


def _name(m: tarfile.TarInfo) -> str:
    n = m.name
    while n.startswith("./"):
        n = n[2:]
    return n


def _kind(m: tarfile.TarInfo) -> str:
    if m.issym():
        return f"a symbolic link (to {m.linkname!r})"
    if m.islnk():
        return f"a hard link (to {m.linkname!r})"
    if m.isdir():
        return "a folder"
    if m.ischr() or m.isblk():
        return "a device"
    if m.isfifo():
        return "a FIFO"
    if m.issparse():
        return "a sparse file"
    return "not a plain file"


def _refuse(tgz: Path, m: tarfile.TarInfo, why: str) -> NpzInputError:
    return NpzInputError(f"{tgz}:{m.name}: {why}; refused without extracting it. A build archive holds "
                         f"only the files leapp-lab compile wrote: remove it, or compile the build again")


def _rules(tgz: Path, body: bytes) -> _Rules:
    """What the rest of the archive may hold, from the bytes of its build.json."""
    try:
        d = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        d = None        # its own reader names it once extracted (tgz:build.json: not valid JSON)
    d = d if isinstance(d, dict) else {}
    files = d.get("files")
    if isinstance(files, dict) and files:
        bad = [k for k, v in files.items() if not is_file_name(k) or k == BUILD_FILE or isinstance(v, bool)
               or not isinstance(v, int) or v < 0]
        if bad:
            raise NpzInputError(f"{tgz}:{BUILD_FILE}: field 'files' lists {bad[0]!r}, which is not a "
                                f"file name with its size in bytes; compile the build again")
        return _Rules(dict(files), True)
    # the engine graphs and the weights an onnxruntime build keeps beside them (engines/onnxrt.py)
    names = {SAMPLE_OUTPUTS, COMPILE_LOG, "engine.onnx", "engine.untapped.onnx", "engine.weights",
             "engine.tapped.weights"}
    names |= {v for v in (d.get("artifact"), d.get("untapped_artifact"), d.get("engine_onnx"))
              if isinstance(v, str) and is_file_name(v)}
    return _Rules({n: None for n in names}, False)


def _check(tgz: Path, m: tarfile.TarInfo, rules: _Rules) -> None:
    name = _name(m)
    if name not in rules.sizes:
        listed = ", ".join([BUILD_FILE, *sorted(rules.sizes)])
        raise _refuse(tgz, m, f"not a file of this build (it holds {listed}"
                              f"{', as its build.json records' if rules.recorded else ''})")
    want = rules.sizes[name]
    if want is not None and m.size != want:
        raise _refuse(tgz, m, f"holds {m.size} bytes, but {BUILD_FILE} records {want}")
    if want is None and m.size > LEGACY_MEMBER_LIMIT:
        raise _refuse(tgz, m, f"holds {m.size} bytes, more than the {LEGACY_MEMBER_LIMIT >> 30} GiB a file of "
                              f"a build that records no sizes may hold")


def plan_extraction(tf: tarfile.TarFile, tgz: Path) -> dict[str, int]:
    """Pass one: every member header checked (see the module docstring); returns name -> size of
    the members to extract. Raises NpzInputError naming ``tgz:member``."""
    seen: dict[str, tarfile.TarInfo] = {}
    skipped: set[str] = set()
    rules: _Rules | None = None
    for m in iter(tf.next, None):
        name = _name(m)
        if m.isdir() and name in ("", ".", "./"):
            continue            # the archive's own top folder (tar -C build .)
        if not m.isfile() or m.issparse():
            raise _refuse(tgz, m, f"is {_kind(m)}")
        if not is_file_name(name) or m.name.startswith("/"):
            raise _refuse(tgz, m, "is not a file at the top level of the archive (a path with folders, "
                                  "'..' or an absolute path)")
        if name in seen or name == CACHE_FILE and CACHE_FILE in skipped:
            raise _refuse(tgz, m, "appears twice in the archive")
        if name == CACHE_FILE:
            # compile's reuse record beside the build (`tar czf b.tgz -C build .` takes it along):
            # not a file of the build, never extracted, but bounded like build.json
            if m.size > BUILD_JSON_LIMIT:
                raise _refuse(tgz, m, f"holds {m.size} bytes, more than the {BUILD_JSON_LIMIT >> 20} MiB a "
                                      f"{CACHE_FILE} may hold")
            skipped.add(name)
            continue
        if name == BUILD_FILE:
            if m.size > BUILD_JSON_LIMIT:
                raise _refuse(tgz, m, f"holds {m.size} bytes, more than the {BUILD_JSON_LIMIT >> 20} MiB a "
                                      f"{BUILD_FILE} may hold")
            fh = tf.extractfile(m)
            rules = _rules(tgz, fh.read(BUILD_JSON_LIMIT + 1) if fh is not None else b"")
            for earlier in seen.values():       # a member stored before build.json
                _check(tgz, earlier, rules)
        elif rules is not None:
            _check(tgz, m, rules)               # refused at its header: its data is never inflated
        seen[name] = m
    if rules is None:                           # no build.json: the files of a build, by name
        rules = _rules(tgz, b"")
        for m in seen.values():
            _check(tgz, m, rules)
    if rules.recorded:
        missing = sorted(set(rules.sizes) - set(seen))
        if missing:
            raise NpzInputError(f"{tgz}: {BUILD_FILE} lists {missing[0]!r}, which the archive does not "
                                f"hold: the archive is incomplete; compile the build again")
    return {n: m.size for n, m in seen.items()}


def check_room(tgz: Path, plan: dict[str, int], folder: str) -> None:
    """The temporary folder must hold every planned member, with room to spare."""
    need = sum(plan.values())
    free = shutil.disk_usage(folder).free
    if need + _ROOM_MARGIN > free:
        raise NpzInputError(f"{tgz}: extracting it needs {need / (1 << 20):,.0f} MiB in the temporary folder "
                            f"{os.path.dirname(folder)}, which has {free / (1 << 20):,.0f} MiB free; free some "
                            f"space, point TMPDIR elsewhere, or extract it yourself (tar xzf) and verify the "
                            f"folder")


def extract_planned(tf: tarfile.TarFile, plan: dict[str, int], dest: Path, tgz: Path) -> None:
    """Pass two: write the planned members into ``dest``, each exactly its planned size; the pass
    stops after the last of them, so nothing after it is inflated."""
    left = dict(plan)
    for m in iter(tf.next, None):
        name = _name(m)
        if name not in left:
            continue
        if not m.isfile() or m.issparse() or m.size != left[name]:
            raise NpzInputError(f"{tgz}:{m.name}: changed while it was read; verify it again")
        src = tf.extractfile(m)
        with open(dest / name, "xb") as out:
            todo = m.size
            while todo > 0:
                chunk = src.read(min(_CHUNK, todo))
                if not chunk:
                    raise EOFError(f"{name} ends early")
                out.write(chunk)
                todo -= len(chunk)
        del left[name]
        if not left:
            return
    if left:
        raise NpzInputError(f"{tgz}: member {next(iter(left))!r} went missing while it was read; verify "
                            f"it again")
