"""Array numbers shared by the leaves: below every leaf package.

``metrics`` (one fused float64 pass over a pair of arrays: the sums behind every metric and the
|diff| histogram; ``kernel`` and ``fused`` run it) and ``checks`` (a traced port's sample check,
tensors as numpy arrays, LEAPP's allclose). ``compare`` scores verify rows with them, ``trace`` its
samples, ``deep`` its replays and parity runs: the same numbers, computed once, without one leaf
importing another. What the numbers mean is ``leapp_lab.model.metrics``'s; this package only reads
arrays. It imports only ``leapp_lab.model`` (numba and torch lazily).
"""
