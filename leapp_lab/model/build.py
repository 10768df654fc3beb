"""The build report: what ``leapp_lab.compile(onnx, engine=...)`` built, bound and measured.

Saved as ``build.json`` in the build folder ``build/model.<engine>/`` (or inside ``.tgz``), next to
the engine artifact, ``sample_outputs.npz`` and ``compile.log``. See docs/schema-verify.md.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .base import Report, register
from .dc import Plain
from .reuse import CacheInfo
from .jsonio import read_json
from .safepaths.inputs import is_file_name
from .tap import Manifest, TapEntry

BUILD_FILE = "build.json"
SAMPLE_OUTPUTS = "sample_outputs.npz"
COMPILE_LOG = "compile.log"

@dataclass
class KernelDiff(Plain):
    """An op type whose node count differs between the optimized untapped and tapped graphs
    (the nodes leapp_lab added to expose taps are not counted)."""
    op: str
    untapped: int
    tapped: int

    def __str__(self) -> str:
        return f"{self.op} {self.untapped}->{self.tapped}"


@dataclass
class ObserverEffect(Plain):
    """Do the taps change the engine being debugged?

    ``checked``: both engines were built and run on every sample. ``outputs_agree``: the model
    outputs of the tapped engine equal (bitwise) those of the untapped one on every sample;
    ``max_abs_diff``: per model output, max |tapped - untapped|. ``kernels_untapped`` /
    ``kernels_tapped``: op type -> node count of the engines' optimized graphs (onnxruntime's
    ``optimized_model_filepath``), tap-exposure nodes excluded; ``kernels_differ``: the op types
    whose counts differ (empty: same kernels). ``naive``: the same record for the *naive* way (taps
    as outputs of the model before conversion), showing what the tap-after-convert design avoids;
    None when not measured. ``note``: a human sentence. ``debug_tensors``: TensorRT only, the
    debug-tensor APIs the tapped engine was built with (``mark_unfused_tensors_as_debug_tensors``:
    op taps, fusion kept; ``mark_debug``: manual and plugin taps, which may keep their tensor from
    being fused; empty: no tap needed one).
    """
    checked: bool = False
    outputs_agree: bool | None = None
    max_abs_diff: dict[str, float | None] = field(default_factory=dict)
    kernels_untapped: dict[str, int] = field(default_factory=dict)
    kernels_tapped: dict[str, int] = field(default_factory=dict)
    kernels_differ: list[KernelDiff] = field(default_factory=list)
    naive: "ObserverEffect | None" = None
    note: str | None = None
    debug_tensors: list[str] = field(default_factory=list)


@register
@dataclass
class BuildReport(Report, Plain):
    """One build. ``engine``: ort | ort-fp16 | ort-int8 | trt-fp32 | trt-fp16 | trt-int8.
    ``onnx`` / ``npz``: the sources; ``artifact``: the engine file name inside the build folder;
    ``untapped_artifact``: the untapped engine (observer-effect check) or None.
    ``inputs`` / ``outputs``: engine input/output names in order (outputs include taps);
    ``model_outputs``: the real outputs; ``samples``: samples run; ``manifest``: the tap manifest
    read from the ONNX (``synthesized`` when it carried none), each tap with how this build
    exposes it (``TapEntry.binding``…); ``taps``: those taps in model order;
    ``observer``: ObserverEffect; ``timings_s``: convert / build / run seconds; ``versions``;
    ``custom_ops``: custom-domain op types seen and whether onnxruntime-extensions served them;
    ``warnings``: human sentences; ``archive``: written as .tgz. ``keep_fp32``: ONNX node names
    this reduced-precision build kept in fp32 (``compile(keep_fp32=...)``; empty: none).
    ``files``: every other file of the build folder but ``cache.json`` (the reuse record, written
    after this one; never in an archive build) -> its size in bytes, as compile wrote it: a
    ``.tgz`` build is extracted only as these (docs/safety.md, size bounds); empty in older builds.
    ``cache``: whether this compile reused the previous build (``CacheInfo``; None: no cache used).
    ``engine_onnx``: the typed ONNX of the engine, a file of the build: the graph onnxruntime runs
    (``ort*``) or TensorRT built its strongly typed network from (``trt-*``), precision written in
    it (float16 tensors and Casts, Q/DQ); None in builds made before it was recorded.
    ``quantizer``: what wrote the int8 Q/DQ (``ort``: onnxruntime's quantize_static; ``modelopt``:
    ModelOpt's ONNX PTQ); None for other precisions.
    """
    kind: ClassVar[str] = "build"
    report_file: ClassVar[str] = BUILD_FILE    # the build folder's file name is part of the contract
    engine: str = "ort"
    onnx: str = ""
    npz: str = ""
    artifact: str = ""
    untapped_artifact: str | None = None
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    model_outputs: list[str] = field(default_factory=list)
    samples: int = 0
    manifest: Manifest = field(default_factory=Manifest)
    observer: ObserverEffect = field(default_factory=ObserverEffect)
    timings_s: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    custom_ops: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    archive: bool = False
    created: str | None = None
    keep_fp32: list[str] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)
    cache: CacheInfo | None = None
    engine_onnx: str | None = None
    quantizer: str | None = None

    path: Path | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    @property
    def taps(self) -> list[TapEntry]:
        return self.manifest.taps

    def tap(self, name: str) -> TapEntry:
        for t in self.taps:
            if t.name == name:
                return t
        raise KeyError(f"build has no tap {name!r}; taps: {[t.name for t in self.taps]}")

    def __bool__(self) -> bool:
        return all(t.binding != "unbound" or t.kind == "plugin" for t in self.taps)

    def to_dataframe(self):
        import pandas as pd
        cols = ["name", "kind", "order", "binding", "binding_reason", "tensor", "bound_to", "via",
                "reference_source", "producer_op", "source"]
        return pd.DataFrame([{c: getattr(t, c) for c in cols} for t in self.taps], columns=cols)

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> "BuildReport":
        return super().from_dict(_upgrade(d), path)

    @classmethod
    def read(cls, path: str | os.PathLike) -> "BuildReport":
        p = Path(path)
        if p.is_dir():
            p = p / BUILD_FILE
        d = read_json(p)
        if not isinstance(d, dict) or d.get("kind") != cls.kind:
            raise ValueError(f"{p}: not a leapp_lab build.json (kind {d.get('kind') if isinstance(d, dict) else None!r})")
        try:
            r = cls.from_dict(d, p.parent)
            for field in ("artifact", "untapped_artifact", "engine_onnx"):
                name = getattr(r, field)
                if name and not is_file_name(name):
                    raise ValueError(f"field {field!r}: {name!r} is not a file name inside the build "
                                     f"(a path, '..' or absolute: a build reads only its own files)")
            for e in r.manifest.rows():
                if not isinstance(e.name, str) or (e.order is not None and (
                        isinstance(e.order, bool) or not isinstance(e.order, int))):
                    raise ValueError(f"entry {e.name!r} has order {e.order!r}")
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise ValueError(f"{p}: malformed build.json ({exc}); re-run leapp-lab compile") from None
        return r


def _upgrade(d: dict[str, Any]) -> dict[str, Any]:
    """A build.json written before taps and their bindings lived in the manifest: top-level
    ``taps`` (``status`` / ``reason``) and the stamped manifest (or null) become today's shape."""
    if "taps" not in d:
        return d
    d = dict(d)
    old_taps = d.pop("taps") or []
    if not isinstance(old_taps, list) or not all(isinstance(t, dict) for t in old_taps):
        raise ValueError(f"field 'taps': expected a list of tap objects, got {old_taps!r:.60}")
    if d.get("manifest") is not None and not isinstance(d["manifest"], dict):
        raise ValueError(f"field 'manifest': expected an object, got {type(d['manifest']).__name__}")
    outs = d.get("model_outputs") or []
    if not isinstance(outs, list):
        raise ValueError(f"field 'model_outputs': expected a list, got {type(outs).__name__}")
    man = dict(d.get("manifest") or {"outputs": [{"name": n} for n in outs], "taps": [], "synthesized": True})
    bind = {t.get("name"): t for t in old_taps if isinstance(t, dict)}
    taps = []
    for t in man.get("taps") or []:
        b = bind.get(t.get("name"), {})
        taps.append({"kind": "manual", **t, "binding": b.get("status"), "binding_reason": b.get("reason"),
                     "bound_to": b.get("bound_to"), "via": b.get("via")})
    man["taps"] = taps
    man["outputs"] = [{"reference_source": "torch", **o, "kind": "output"} for o in man.get("outputs") or []]
    d["manifest"] = man
    return d


def prepared_onnx_candidates(onnx: str | None, build_path: Path, ref_path: Path) -> list[Path]:
    """Where the ONNX a build was compiled from (the prepared model of ``ref_path``) may be, in
    order: build.json's ``onnx`` as written, beside the build (``build_path``: the build as the user
    named it), beside the reference; then ``<stem>.onnx`` beside ``<stem>.reference.npz``. Whether
    each exists is the caller's to check."""
    out: list[Path] = []
    if onnx:
        p = Path(onnx)
        out += [p, build_path.parent / p.name, ref_path.parent / p.name]
    if ref_path.name.endswith(".reference.npz"):
        out.append(ref_path.with_name(ref_path.name[: -len(".reference.npz")] + ".onnx"))
    return list(dict.fromkeys(out))
