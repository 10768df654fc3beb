"""The number format of every view lives in ``leapp_lab.model.numfmt`` (below the leaves, so the
messages trace and the deep checks write use it too); this name stays importable for views."""
from leapp_lab.model.numfmt import NONE, fmt, fmt_exp

__all__ = ["NONE", "fmt", "fmt_exp"]
