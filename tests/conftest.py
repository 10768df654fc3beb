import os
import shutil
import signal
from pathlib import Path

import pytest

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
    _group_for_xdist(items)
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


def _group_for_xdist(items):
    """Under pytest-xdist (``--dist loadgroup``, scripts/test.sh): each test module is one unit of work,
    so its module fixtures and module-level caches are built once, on one worker; a module that marks
    its tests ``xdist_group(name)`` itself joins that group (docs/contributing.md, "The test suite")."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(Path(str(item.fspath)).relative_to(ROOT).as_posix()))
