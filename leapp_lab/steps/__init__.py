"""Steps: the orchestration above the leaf packages, and the only package that calls several of them.

Leaves (``taps``, ``engines``, ``compare``, ``trace``, ``deep``) each do one thing and import only
``model``, ``onnxio``, ``numerics``, ``egress``, ``_compat`` and the standard stack, never each other;
a step composes them (docs/contributing.md, "Package layout"):

- ``prepare``: a model and samples -> a tapped ONNX, its reference npz (taps);
- ``compile``: the prepared ONNX -> a build folder (engines, the manifest from onnxio);
- ``verify`` / ``verify_build`` / ``verify_many``: a reference against one build or several
  (compare scores, ``local_error`` runs the engine teacher-forced, ``expected_drift`` re-runs the
  model in low precision with taps);
- ``repair`` (``repair_segments``, ``repair_tasks``): the precision-repair sweep, many compiles and
  verifies through one executor;
- ``trace`` / ``rerun`` / ``deep_checks``: a traced body or script, then the deep checks that trace it
  again (trace + deep).

Every step imports its leaves inside its functions or at its own top, as the leaves did, so the
start-up cost of a command is what it was (tests/integration/test_startup_imports.py).
"""

#: the engines ``repair`` sweeps; here, not in ``steps.repair`` (numpy, the executor): the
#: ``leapp-lab repair --engine`` choices are read whenever the CLI's parser is built
REPAIRABLE = ("ort-int8", "ort-fp16", "trt-fp16")
