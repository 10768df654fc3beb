"""Comparison of two sets of arrays: the fused metric pass, pairing, model order, the divergence rule."""
from leapp_lab.numerics.metrics import diff_stats, diff_sums

__all__ = ["diff_stats", "diff_sums"]
