"""Small shared test models, each a MODEL.py for ``leapp-lab prepare`` (Model + get_fwd_args + get_samples)."""
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent


def model_path(name: str) -> Path:
    """Path of tests/models/<name>.py (e.g. model_path("mlp_policy"))."""
    p = MODELS_DIR / f"{name}.py"
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such test model")
    return p
