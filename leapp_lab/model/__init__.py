"""Report dataclasses and their on-disk form. Imports only the stdlib and numpy."""
from .base import REPORT_FILE, SCHEMA_VERSION, Report, load, register
from .jsonio import load_npz, read_json, save_npz, write_json
from .runs import RunFolder, lab_dir, latest_run, list_runs

__all__ = ["REPORT_FILE", "SCHEMA_VERSION", "Report", "load", "register", "load_npz", "read_json",
           "save_npz", "write_json", "RunFolder", "lab_dir", "latest_run", "list_runs"]
