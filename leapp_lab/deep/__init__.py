"""Deep LEAPP checks beyond per-sample validation (docs/deep-checks.md).

- ``replay``: the exported pipeline step after step with its own state fed back (``replay.py``);
- ``parity``: exported vs original on fresh inputs (``parity.py``);
- ``adapters``: every ``leapp.FunctionPatch`` against the function it replaces: run by every trace,
  so it is ``leapp_lab/trace/adapters.py``;
- ``exporters``: every node with every export backend, in fresh sessions (``exporters.py``);
- ``isolate``: the body again with dry_run / non_traced / global_patching=False (``isolation.py``).

Each produces a section of the graph's report (``leapp_lab/model/<section>.py``) saved in its run
folder. ``body.py`` says what re-running a traced body safely is (``Body``); the bodies that trace
again (a callable, a notebook cell, a script) are ``leapp_lab.steps.rerun``'s, and the public
``exporters`` / ``isolate`` that make one from a callable are ``leapp_lab.steps.deep_checks``'s: deep
never imports trace (docs/contributing.md, "Package layout").
"""
