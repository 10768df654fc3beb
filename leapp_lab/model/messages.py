"""An exception or a tool's log line as the one line of text a report or an error message quotes.

Shared below the leaves: LEAPP's log (``trace``), the exporters' and onnxruntime's messages
(``taps``), a deep check or the adapter check that raised (``deep``, ``trace``) all end up as a
reason in a report or a one-line error, and are cut and cleaned the same way.
"""
from __future__ import annotations

import os
import re
import sysconfig
import traceback

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (they would garble a one-line reason)."""
    return _ANSI.sub("", text)


def error_text(exc: BaseException, limit: int = 600) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + " …"


#: the folders whose frames are not the user's code: leapp_lab itself, the standard library and
#: installed packages (a deep check that raises inside torch, called from the user's step_fn, is
#: placed at the user's line)
_OURS = os.path.join(os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "")
_NOT_USER = tuple({_OURS, *(os.path.join(os.path.realpath(sysconfig.get_paths()[k]), "")
                            for k in ("stdlib", "platstdlib", "purelib", "platlib"))})


def failed_reason(what: str, exc: BaseException) -> str:
    """The reason of a section whose check raised: the error and where it came from, the innermost
    line of the user's own code (a step_fn, a model); none when leapp_lab raised it itself (its
    message already says what to fix) and no user code was running.

    A write that found no room (a full disk, ``ulimit -f``) is never a section's reason: it is
    raised again here, where every check turns its failure into a result, and the command exits 2
    naming the path (docs/safety.md, "A full disk is never a finding")."""
    from .safepaths.oserrors import no_room
    if no_room(exc) is not None:
        raise exc
    tb = traceback.extract_tb(exc.__traceback__)
    # only what leapp_lab called: the frames of whoever caught it (outside the check) are not the cause
    first = next((i for i, fr in enumerate(tb) if os.path.realpath(fr.filename).startswith(_OURS)), -1)
    user = [fr for fr in tb[first + 1:] if not fr.filename.startswith("<")
            and not os.path.realpath(fr.filename).startswith(_NOT_USER)]
    fr = user[-1] if user else None
    where = f" (at {os.path.basename(fr.filename)}:{fr.lineno})" if fr is not None else ""
    return f"{what} raised {error_text(exc)}{where}"


def headline(text: str | None) -> str:
    """The line of a multi-line error that says what failed: its first non-blank line, joined with
    the next one when it ends in ``:``. TorchScript's errors start with a newline, so LEAPP's
    ``Error compiling model X: `` is followed by the cause on the next line, not on the first."""
    lines = [x.strip() for x in strip_ansi(text or "").splitlines() if x.strip()]
    if not lines:
        return ""
    return f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]


def script_site(text: str | None) -> str | None:
    """The code line TorchScript marks ``<--- HERE`` in a compile error (the call it rejects)."""
    lines = strip_ansi(text or "").splitlines()
    for i, x in enumerate(lines):
        if "<--- HERE" in x and i > 0 and lines[i - 1].strip():
            return lines[i - 1].strip().split(";")[0]
    return None


#: what a terminal would act on instead of print: C0/C1 control characters but newline and tab (ESC
#: starts the sequences that clear the screen, set the title or write the clipboard; a CR prints a
#: line over another), bidi overrides and isolates, and the line / paragraph separators
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` safe to print to a terminal: every character a terminal would act on is written as
    its escape (``\\x1b``, ``\\u202e``). Names in a report come from files someone else may have
    made (an npz member, a node in report.json), and leapp_lab prints them."""
    return _TERMINAL_CONTROLS.sub(lambda m: repr(m.group())[1:-1], text)


# torch.onnx's boilerplate around the real exception: "Failed to convert the exported program ...
# Next steps: ... ## Exception summary\n<class '...DispatchError'>: No ONNX function found for ..."
_SUMMARY = re.compile(r"^\s*#+\s*Exception summary\s*$", re.I | re.M)
_CLASS = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")
_OVERLOAD = re.compile(r"<OpOverload\(op='([\w.]+)', overload='(\w+)'\)>")
_OBJECT = re.compile(r"<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>")
_ATEN = re.compile(r"\b(aten\.[\w.]+)")


_CHAINED = re.compile(r"^(?:The above exception was the direct cause of the following exception:|"
                      r"During handling of the above exception, another exception occurred:)\s*$", re.M)
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit)): (.*)$")
_PASS = re.compile(r"when running the '<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>' pass")


def root_exception(traceback_text: str | None) -> tuple[str, str | None] | None:
    """(``Type: message`` of the first exception of a chained traceback, the innermost exporter pass
    that raised or None), or None when the text holds no traceback. A pass manager wraps the
    exception of the pass that failed: that one says what went wrong."""
    raw = strip_ansi(traceback_text or "")
    if "Traceback (most recent call last)" not in raw:
        return None
    blocks = _CHAINED.split(raw)
    found = None
    for block in blocks:
        lines = [ln.strip() for ln in block.splitlines() if _EXC_LINE.match(ln.strip())]
        if lines:
            found = lines[-1]
            break
    if found is None:
        return None
    kind, msg = _EXC_LINE.match(found).groups()
    passes = [m.group(1) for m in _PASS.finditer(raw) if m.group(1) != "PassManager"]
    return f"{kind.rsplit('.', 1)[-1]}: {msg}", (passes[0] if passes else None)


def exporter_cause(text: str | None, chain: str | None = None) -> tuple[str, str | None]:
    """(the exception's own words, the op it names or None) of an exporter's failure, without the
    exporter's boilerplate and with object reprs as their class names (a ``<onnx_ir.passes.
    PassManager object at 0x…>`` is "PassManager", never quoted as the op). ``chain``: the whole
    traceback where one was kept; its first exception, and the pass it ran in, are the cause when
    the error is a pass manager's wrapper."""
    root = root_exception(chain)
    if root is not None and "PassManager" in (text or ""):
        words, where = root
        words = _OVERLOAD.sub(lambda o: o.group(1), _CLASS.sub(r"\1", _OBJECT.sub(r"\1", words)))
        op = _ATEN.search(words)
        return (words.strip().rstrip(".") + (f" (in the exporter's {where})" if where else ""),
                op.group(1).rstrip(".") if op else None)
    raw = strip_ansi(text or "")
    m = _SUMMARY.search(raw)
    if m is not None:
        after = [x.strip() for x in raw[m.end():].splitlines() if x.strip()]
        line = after[0] if after else ""
    else:
        line = headline(raw)
        line = re.sub(r"^(?:\w+: )?Error compiling model .+?:\s*", "", line)
    line = _OVERLOAD.sub(lambda o: o.group(1) + ("" if o.group(2) == "default" else f".{o.group(2)}"), line)
    line = _CLASS.sub(r"\1", line)
    line = _OBJECT.sub(r"\1", line).strip().rstrip(".")
    op = _ATEN.search(line)
    return line, (op.group(1).rstrip(".") if op else None)
