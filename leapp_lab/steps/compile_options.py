"""compile's options checked against the engine and the model: ``keep_fp32`` (node names of the
prepared ONNX, reduced-precision engines only) and ``quantizer`` (int8 engines only); each wrong
value is an InvalidOption naming it (exit 2)."""
from __future__ import annotations

from pathlib import Path

from leapp_lab.model.errors import InvalidOption
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX


QUANTIZERS = ("ort", "modelopt")


def _check_quantizer(engine: str, quantizer: str | None) -> None:
    if quantizer is None:
        return
    if quantizer not in QUANTIZERS:
        raise InvalidOption(f"quantizer {quantizer!r}: choose one of {', '.join(QUANTIZERS)} (default ort)")
    if not engine.endswith("int8"):
        raise InvalidOption(f"--quantizer applies to the int8 engines (ort-int8, trt-int8); {engine} "
                            "quantizes nothing")


def _check_keep_fp32(eng, model, keep_fp32, onnx_path: Path) -> list[str]:
    """The ``keep_fp32`` node names, checked against the model (InvalidOption, a ValueError, naming
    what is wrong)."""
    if keep_fp32 is None:
        return []
    if isinstance(keep_fp32, str):
        keep_fp32 = [keep_fp32]
    keep = sorted(set(map(str, keep_fp32)))
    if not keep:
        return []
    if eng.precision == "fp32":
        raise InvalidOption(f"keep_fp32 applies to reduced-precision engines (ort-fp16, ort-int8, trt-fp16); "
                         f"{eng.name} already computes every node in fp32")
    names = {n.name for n in model.graph.node if n.name}
    unknown = [k for k in keep if k not in names]
    if unknown:
        import difflib                  # the model's own nodes, not the tap markers prepare added
        real = sorted(n for n in names if not n.startswith(IDENTITY_PREFIX))
        like = difflib.get_close_matches(unknown[0], real, n=3)
        raise InvalidOption(f"{onnx_path}: keep_fp32 names {len(unknown)} node(s) the model does not have: "
                         f"{unknown[:5]}{' ...' if len(unknown) > 5 else ''}; pass ONNX node names "
                         + (f"(did you mean {like}?)" if like else f"(e.g. {real[:3]})"))
    return keep
