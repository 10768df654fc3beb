"""The two rules every command and API function applies to the paths it is given (docs/safety.md).

**Inputs** are read only when they are regular files (or folders where a folder is meant):
``/dev/zero``, a FIFO, a socket or a device is refused before a byte is read.

**Outputs** never destroy an input or anything leapp_lab did not write. An output path that *is* one
of the command's inputs, *contains* one (a folder above it), or *lies inside* an input file or folder
is refused, naming both; so is one inside any build (the next compile deletes it) and one
where no file can be created (checked by a probe, before any work). An existing path is replaced
only when leapp_lab wrote it for the same purpose (a build folder with its ``build.json``, an HTML
report carrying :data:`HTML_MARKER`, a ``verify --json`` file, ...), and only by renaming a completely written temporary sibling over it.

Both raise :class:`~leapp_lab.model.errors.UserError` subclasses: the CLI prints the message on one
line and exits 2.

One module per concept, their public names all importable from here: ``inputs`` (input checks),
``recognise`` (what leapp_lab wrote, and the purpose of each output), ``prepare_record`` (the files
a prepare wrote), ``outputs`` (the output checks), ``staging`` (temporary siblings renamed over the
final paths, folders made and removed) and ``oserrors`` (one line for an OSError).
"""
from __future__ import annotations

from .inputs import (check_input_file, check_input_path, is_file_name, kind_of, open_input, optional_input,
                     present, read_input_bytes, read_input_text, real_path)
from .recognise import (HTML_MARKER, PURPOSES, Purpose, is_build, is_html_report, is_latest_pointer,
                        is_node_data, json_kind, npz_has_member)
from .prepare_record import PREPARE_WRITTEN, prepare_purposes, prepare_written
from .outputs import check_outputs, check_replaceable, check_writable, enclosing_build
from .staging import (make_folders, no_room_error, remove_made, remove_path, replace_path, room_problem,
                      stage_path, staged, writing)
from .oserrors import ENVIRONMENT_ERRNOS, NO_ROOM_ERRNOS, no_room, oserror_line

__all__ = [
    "check_input_file", "check_input_path", "is_file_name", "kind_of", "open_input", "optional_input",
    "present", "read_input_bytes", "read_input_text", "real_path", "HTML_MARKER", "PURPOSES",
    "Purpose", "is_build", "is_html_report", "is_latest_pointer", "is_node_data", "json_kind",
    "npz_has_member", "PREPARE_WRITTEN", "prepare_purposes", "prepare_written", "check_outputs",
    "check_replaceable", "check_writable", "enclosing_build", "make_folders", "remove_made",
    "remove_path", "replace_path", "room_problem", "stage_path", "staged", "writing",
    "ENVIRONMENT_ERRNOS", "oserror_line", "NO_ROOM_ERRNOS", "no_room", "no_room_error",
]
