#!/usr/bin/env bash
# The main job on a fresh machine: install, trace the embedded example pipeline (it has a
# deliberate frozen-constant bug), print the diagnosis and write a report you can open offline.
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/install.sh | tail -n 1)
exec "$py" -m leapp_lab.cli demo --out "${1:-demo-out}"
