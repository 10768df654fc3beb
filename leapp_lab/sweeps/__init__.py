"""Sweeps: many builds of one model, run through one executor (``leapp_lab.executor``).

``segments`` cuts a prepared model into model-order stretches (one per tap), ``tasks`` holds the
picklable functions a worker runs, ``repair`` is the precision-repair sweep
(``leapp_lab.repair``).
"""
