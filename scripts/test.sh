#!/usr/bin/env bash
# Installs everything the tests need (Chromium from Debian included) and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/install.sh --dev | tail -n 1)
exec "$py" -m pytest -q -ra "$@"
