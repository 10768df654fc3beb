"""A LEAPP node's traced FX graph as plain data: saved in a trace run folder, rebuilt later.

Neutral ground below the leaves: ``trace`` saves the graphs, ``taps`` and ``steps`` rebuild them
(``prepare --from-trace``, ``verify --expected`` of such a build); it imports only ``model``.
"""
