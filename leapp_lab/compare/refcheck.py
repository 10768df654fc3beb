"""Is this reference npz the one prepare wrote for this model? Checked from names and headers only,
before anything is built: verify checks it against a build's sample outputs, repair against the
ONNX it sweeps (``leapp_lab.steps.reference_check``), so another model's reference is named as such
(exit 2) and never reaches a sweep whose baseline then "cannot be built".
"""
from __future__ import annotations

from pathlib import Path

from .npzio import NpzInputError

#: reference npz members that are telemetry, not outputs
REFERENCE_META_KEYS = ("benchmark_timings_ms",)


def check_shared_names(ref_path: Path, ref_names: list[str], other: Path, other_names: list[str],
                       side: str = "build") -> None:
    """Refuse a reference that shares no array name with ``other`` (a build's sample outputs, or the
    outputs and taps of an ONNX): it belongs to another model."""
    if ref_names and other_names and not set(ref_names) & set(other_names):
        raise NpzInputError(f"{ref_path} and {other}: no array name in common (reference: "
                            f"{ref_names[:5]}, {side}: {other_names[:5]}): the reference belongs to "
                            f"another model (or is not a reference); pass the model.reference.npz "
                            f"prepare wrote with this model")
