#!/usr/bin/env bash
# Installs everything the tests need (Chromium from Debian included) and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/install.sh --dev | tail -n 1)
# two workers (pytest-xdist), a test module per unit of work (docs/contributing.md, "The test suite");
# `-n 0` after them runs it in one process
exec "$py" -m pytest -q -ra -n 2 --dist loadgroup "$@"
