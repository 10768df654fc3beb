"""Comparison of two sets of arrays: exact metrics, histograms, pairing, model order, diagnoses."""
from .metrics import DiffStats, LogHistogram, diff_stats

__all__ = ["DiffStats", "LogHistogram", "diff_stats"]
