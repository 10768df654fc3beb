"""Repair's check of its inputs: is this reference npz the one prepare wrote for the ONNX it sweeps?

From names and headers only, before anything is built, so another model's reference is named as
such (exit 2) and never reaches a sweep whose baseline then "cannot be built". It reads the
manifest (``onnxio``), applies compile's own check of the input npz (``engines.feeds``) and verify's
check of shared names (``compare.refcheck``): one step's composition of three packages.
"""
from __future__ import annotations

from pathlib import Path

from leapp_lab.compare.npzio import NpzInputError
from leapp_lab.compare.refcheck import REFERENCE_META_KEYS, check_shared_names
from leapp_lab.engines.feeds import check_feeds
from leapp_lab.model.npzcheck import check_npz
from leapp_lab.onnxio.manifest import read_manifest


def check_reference_for_model(ref_path: Path, onnx_path: Path, npz_path: Path) -> None:
    """The reference must hold the model outputs of the prepared ``onnx_path`` (its manifest), on as
    many samples as the input npz, and the npz must feed the model (compile's own check). Raises
    NpzInputError / CompileInputError (UnusableInput) naming both files; ManifestError (a
    ValueError) for an ONNX without a readable manifest."""
    import onnx

    from leapp_lab.model.safepaths import check_input_file
    from leapp_lab.onnxio.wire import check_external_data
    check_input_file(onnx_path, "an ONNX model")
    check_external_data(onnx_path)
    try:
        model = onnx.load(str(onnx_path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - any parse error of a corrupt file
        if is_zip(onnx_path):       # an npz: the two positional arguments swapped, most likely
            swapped = ref_path.suffix == ".onnx"
            ex = f"{onnx_path} {ref_path}" if swapped else "build/model.reference.npz build/model.onnx"
            raise NpzInputError(f"{onnx_path}: an npz archive, not an ONNX model; repair takes REFERENCE.npz "
                                f"first, then the MODEL.onnx prepare wrote{' (did you swap them?)' * swapped}: "
                                f"leapp-lab repair {ex}") from None
        raise NpzInputError(f"{onnx_path}: not a readable ONNX model ({type(exc).__name__}: "
                            f"{str(exc)[:200]}); run leapp-lab prepare again") from None
    manifest = read_manifest(model, onnx_path)
    check_feeds(model, manifest.inputs, npz_path)   # names, ranks, dtypes, samples of the inputs
    try:
        ref = check_npz(ref_path)
    except NpzInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - UnusableInput: keep verify's error type
        raise NpzInputError(str(exc)) from None
    ref_names = [k for k in ref if k not in REFERENCE_META_KEYS]
    outputs = [o.name for o in manifest.outputs]
    model_names = outputs + [t.name for t in manifest.taps]
    check_shared_names(ref_path, ref_names, onnx_path, model_names, side="model")
    missing = [o for o in outputs if o not in ref]
    if missing:
        raise NpzInputError(f"{ref_path}: has no array for model output(s) {missing[:5]} of {onnx_path} "
                            f"(it holds {ref_names[:5]}), so their error cannot be measured; pass the "
                            f"model.reference.npz prepare wrote with {onnx_path.name} (or re-run prepare)")
    for o in model.graph.output:
        dims = _declared_dims(o)
        if o.name not in outputs or dims is None:
            continue
        per = tuple(ref[o.name].shape[1:])
        if len(per) != len(dims) or any(d is not None and a != d for a, d in zip(per, dims)):
            raise NpzInputError(
                f"{ref_path}: model output {o.name!r} has per-sample shape {per}, {onnx_path} declares "
                f"{tuple('?' if d is None else d for d in dims)}, so its error cannot be measured: the "
                f"reference is of another model; pass the model.reference.npz prepare wrote with "
                f"{onnx_path.name}")
    n_inputs = check_npz(npz_path)[manifest.inputs[0]].shape[0] if manifest.inputs else None
    for name in ref_names:
        shape = ref[name].shape
        if n_inputs is not None and (not shape or shape[0] != n_inputs):
            raise NpzInputError(
                f"{ref_path}: array {name!r} holds {shape[0] if shape else 'no'} sample(s) and "
                f"{npz_path} {n_inputs}: the reference was made from other inputs; pass the --npz "
                f"prepare wrote with it, or re-run prepare")


def _declared_dims(value_info) -> list[int | None] | None:
    """A graph output's dims (None for a symbolic one), or None when the ONNX declares no shape."""
    tt = value_info.type.tensor_type if value_info.type.HasField("tensor_type") else None
    if tt is None or not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]


def is_zip(path) -> bool:
    """``path`` starts as a zip archive does (an npz): what a file passed as an ONNX model
    most likely is when it does not parse."""
    from leapp_lab.model.safepaths import open_input
    try:
        with open_input(path) as f:
            return f.read(4) == b"PK\x03\x04"
    except (OSError, ValueError):
        return False
