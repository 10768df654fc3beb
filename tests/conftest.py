import os
import shutil
import signal
from pathlib import Path

import pytest

from tests import parallel

ROOT = Path(__file__).resolve().parents[1]

# The test processes send nothing either (docs/safety.md, "No egress"): onnxruntime reads its switch
# once, when it loads, and some test modules import it before leapp_lab (which would set it).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
ARTIFACTS = ROOT / "test-artifacts"

# A shell without job control starts background commands (`pytest ... &`) with SIGINT ignored, and an
# ignored signal stays ignored across exec: the Ctrl-C tests' subprocesses would never see their
# SIGINT. A handler here is reset to the default in every child, as a terminal's Ctrl-C expects.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where tests keep what a person may want to look at afterwards (screenshots, reports)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def pytest_collection_modifyitems(config, items):
    # tests/integration/ runs real LEAPP / torch / onnxruntime: select or skip them with -m integration
    for item in items:
        if "integration" in Path(str(item.fspath)).parts:
            item.add_marker(pytest.mark.integration)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        parallel.order(items)       # the units of work, heaviest first (tests/parallel.py)
    # Browser tests need Debian's Chromium. CI installs it (scripts/test.sh), so CI never skips;
    # a developer machine without it skips them with the reason below.
    if os.path.exists("/usr/bin/chromium"):
        return
    if os.environ.get("CI"):
        return  # let them fail loudly in CI
    skip = pytest.mark.skip(reason="/usr/bin/chromium not found: run scripts/test.sh (installs it from Debian)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)



@pytest.hookimpl(optionalhook=True)     # a hook of pytest-xdist: without it, never called
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (scripts/test.sh): whole modules, one browser unit and one timing unit
    per worker at a time (tests/parallel.py)."""
    if config.getvalue("dist") == "loadgroup":
        return parallel.make_scheduler(config, log)
    return None
