"""Errors raised by prepare; the CLI turns them into exit status 2 with the message alone."""
from __future__ import annotations

# exporter and onnxruntime messages carry terminal colours that would garble a one-line reason
from ..model.messages import strip_ansi
from ..model.errors import UserError
from .marker import DuplicateTapError, TapError  # noqa: F401  (re-exported)


class PrepareError(UserError):
    """Bad input to prepare: the message names the file, tap or sample and what to do."""


class UserExit(PrepareError):
    """The user's code called ``sys.exit()`` where leapp_lab needs it to return: ``verify
    --expected`` refuses (exit 2) rather than skipping, as for a process that ended outright."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, short enough to quote inside ours."""
    text = strip_ansi(str(exc)).strip().splitlines()
    return text[0][:300] if text else ""
