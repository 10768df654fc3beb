"""Errors raised by prepare; the CLI turns them into exit status 2 with the message alone."""
from __future__ import annotations

from .marker import DuplicateTapError, TapError  # noqa: F401  (re-exported)


class PrepareError(ValueError):
    """Bad input to prepare: the message names the file, tap or sample and what to do."""
