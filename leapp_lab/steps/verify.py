"""``leapp_lab.verify(reference_npz, build)``: compare a reference npz with a build's sample outputs;
with a list of builds, ``verify_many`` (one table, a CompareReport).

One build is ``steps.verify_build``; several are ``steps.verify_many``, which verifies each build
through ``verify_build`` too, so neither module imports this one or the other's caller.
See docs/verify.md for the rule, statuses and exit codes.
"""
from __future__ import annotations

from leapp_lab.compare.npzio import NpzInputError
from leapp_lab.compare.refcheck import REFERENCE_META_KEYS
from leapp_lab.compare.scoring import check_options
from leapp_lab.model.verify import VerifyReport

from .verify_build import check_verify_outputs, verify_build


def verify(reference_npz, build, max_mape: float | None = None, max_mape_taps: bool = False,
           out=None, *, verbose: bool = False, json_path=None, save: bool = True,
           div_nrmse: float | None = 1.0, div_mape: float | None = None, div_cosine: float = 0.999,
           div_nonfinite: bool = True,
           rtol: float = 1e-3, workers: int | None = None, progress=None, local: bool = False,
           expected: str | None = None, html=None) -> VerifyReport:
    """Compare ``reference_npz`` (prepare's model.reference.npz) with ``build`` (a build folder or
    .tgz): ``steps.verify_build.verify_build``, whose docstring says every option.
    ``build`` may be a list of builds: then this is ``verify_many`` (one table, a CompareReport).
    """
    check_options(max_mape=max_mape, div_nrmse=div_nrmse, div_mape=div_mape, div_cosine=div_cosine,
                  rtol=rtol, workers=workers)
    options = dict(verbose=verbose, json_path=json_path, save=save, div_nrmse=div_nrmse, div_mape=div_mape,
                   div_cosine=div_cosine, div_nonfinite=div_nonfinite, rtol=rtol, workers=workers,
                   progress=progress, local=local, expected=expected, html=html)
    if isinstance(build, (list, tuple)):
        from .verify_many import verify_many
        return verify_many(reference_npz, build, max_mape, max_mape_taps, out, **options)
    return verify_build(reference_npz, build, max_mape, max_mape_taps, out, **options)


__all__ = ["verify", "check_verify_outputs", "REFERENCE_META_KEYS", "NpzInputError"]
