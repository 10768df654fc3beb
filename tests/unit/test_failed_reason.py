"""A deep check's failed reason places the error in the user's code, never inside leapp_lab."""
import inspect

from leapp_lab.deep.stepfn import call
from leapp_lab.model.messages import failed_reason


def _reason(step_fn) -> str:
    try:
        call(step_fn, {}, False, names={"policy/action": "policy/action"})
    except Exception as exc:    # noqa: BLE001 - what replay catches
        return failed_reason("the fresh replay (step_fn)", exc)
    raise AssertionError("the step did not raise")


def test_an_error_raised_in_the_step_fn_is_placed_at_its_line():
    def step(inputs, reset):
        raise RuntimeError("simulator offline")
    line = inspect.getsourcelines(step)[1] + 1
    assert _reason(step).endswith(f"RuntimeError: simulator offline (at test_failed_reason.py:{line})")


def test_an_error_raised_in_a_library_the_step_fn_called_is_placed_at_the_user_line():
    import numpy as np

    def step(inputs, reset):
        return np.zeros(2).reshape(3)       # numpy raises; the user's line is this one
    line = inspect.getsourcelines(step)[1] + 1
    assert f"(at test_failed_reason.py:{line})" in _reason(step)


def test_leapp_labs_own_check_of_what_the_step_fn_returned_names_no_leapp_lab_line():
    # before: "KeyError: step_fn returned 'nope' ... (at stepfn.py:134)", a line of leapp_lab
    reason = _reason(lambda inputs, reset: {"nope": 1.0})
    assert "'nope'" in reason and "(at " not in reason, reason


def test_a_full_disk_is_raised_again_never_a_sections_reason():
    """Every deep check records its failure through failed_reason; a write that found no room is
    the machine's (exit 2 naming the path), never "the replay raised OSError: … No space left"."""
    import errno

    import pytest

    full = OSError(errno.ENOSPC, "No space left on device", "/run/replay.npz")
    with pytest.raises(OSError) as got:
        failed_reason("the replay", full)
    assert got.value is full
    try:            # a library's own error with the full disk as its cause
        try:
            raise OSError(errno.EFBIG, "File too large")
        except OSError as e:
            raise RuntimeError("serialization failed") from e
    except RuntimeError as wrapped:
        with pytest.raises(RuntimeError):
            failed_reason("the exporter matrix", wrapped)
    assert "PermissionError" in failed_reason("x", PermissionError(errno.EACCES, "denied"))
