"""The errors a user can fix: the CLI prints their message on one line and exits 2 (docs/safety.md).

Every message names the file, folder, option or name at fault and says what to do. Anything else
that escapes a command is a bug in leapp_lab and keeps its traceback.
"""
from __future__ import annotations


class UserError(ValueError):
    """Bad input the user can fix (exit status 2); a ValueError, so ``except ValueError`` still works."""


class UnusableInput(UserError):
    """An input that cannot be read as what it should be (missing, not a regular file, corrupt)."""


class UnsafeOutput(UserError):
    """An output path that would destroy an input or something leapp_lab did not write."""


class InvalidOption(UserError):
    """An option value outside its meaning (a NaN threshold, a negative tolerance)."""


class MissingInput(UnusableInput, FileNotFoundError):
    """An input path that does not exist (or holds nothing of what is asked for). An UnusableInput,
    so every reader raises one error type for unusable paths, and still a FileNotFoundError for the
    callers that caught that before."""


class NotAFile(UnusableInput):
    """An input path that holds something other than a regular file within its size bound: a FIFO,
    a device, a socket, a folder, a dangling link, or a file too large. Refused wherever it is met
    (exit 2), also where a missing or corrupt file only makes a check unavailable: what is there
    is not data that went missing but something no reader should open."""
