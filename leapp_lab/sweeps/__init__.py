"""Sweeps: many builds of one model, run through one executor (``leapp_lab.executor``).

``segments`` cuts a prepared model into model-order stretches (one per tap), ``tasks`` holds the
picklable functions a worker runs, ``repair`` is the precision-repair sweep
(``leapp_lab.repair``).
"""

#: the engines ``repair`` sweeps; here, not in ``sweeps.repair`` (numpy, the executor): the
#: ``leapp-lab repair --engine`` choices are read whenever the CLI's parser is built
REPAIRABLE = ("ort-int8", "ort-fp16", "trt-fp16")
