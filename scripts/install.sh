#!/usr/bin/env bash
# Installs leapp_lab and everything it needs into a Python environment.
#   - an active virtualenv/conda env is used as it is; otherwise ./.venv is created;
#   - a torch that is already importable there is kept; otherwise torch==2.13.0 is installed
#     (pinned exactly, so pip never pulls a multi-GB CUDA build where a CPU wheel is on disk);
#   - with --dev, also the test extras, Chromium and Graphviz from Debian (for browser tests), and
#     Node.js + npm from Debian with the front-end's pinned esbuild (`npm ci` in extensions/: the
#     bundle's rebuild test and the JS unit tests; docs/contributing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0
[ "${1:-}" = "--dev" ] && dev=1

if [ -n "${VIRTUAL_ENV:-}" ]; then
  py="$VIRTUAL_ENV/bin/python"
elif [ -n "${CONDA_PREFIX:-}" ]; then
  py="$CONDA_PREFIX/bin/python"
else
  [ -x .venv/bin/python ] || python3 -m venv .venv
  py="$PWD/.venv/bin/python"
fi
echo "leapp_lab: installing into $("$py" -c 'import sys; print(sys.prefix)')" >&2

pip_install() {
  # This machine image's pip config names index folders that may not exist; pip then prints one
  # harmless warning per package. Drop exactly those lines, keep everything else (and the status).
  "$py" -m pip install -q "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

if "$py" -c 'import torch' 2>/dev/null; then
  echo "leapp_lab: keeping torch $("$py" -c 'import torch; print(torch.__version__)')" >&2
else
  pip_install torch==2.13.0
fi

if [ "$dev" = 1 ]; then
  pip_install -e ".[dev]"
  # the corpus's RL libraries (pyproject's `corpus` extra) without their declared dependencies:
  # torchvision / tensorboard / an old psutil would pull a CUDA torch or downgrade packages
  pip_install --no-deps "rsl-rl-lib==5.0.1" "skrl==2.1.0" "stable-baselines3>=2.6" "rl-games==1.6.5"
  need=()
  [ -x /usr/bin/chromium ] || need+=(chromium)
  command -v dot >/dev/null || need+=(graphviz)
  command -v strace >/dev/null || need+=(strace)   # the no-egress test traces a sweep's syscalls
  command -v node >/dev/null || need+=(nodejs)
  command -v npm >/dev/null || need+=(npm)
  if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" fonts-dejavu-core >/dev/null
    else
      echo "leapp_lab: please install ${need[*]} (Debian: sudo apt-get install -y ${need[*]})" >&2
      [ -n "${CI:-}" ] && exit 1
    fi
  fi
  # the pinned esbuild (extensions/package-lock.json), unless that exact version is there already
  if command -v npm >/dev/null && ! node -e 'const pin = require("./extensions/package.json").devDependencies.esbuild;
      process.exit(require("./extensions/node_modules/esbuild/package.json").version === pin ? 0 : 1)' 2>/dev/null; then
    (cd extensions && npm ci --no-audit --no-fund >&2)
  fi
else
  pip_install -e .
fi
# leapp_lab's bytecode, once: an editable install has none, and where PYTHONDONTWRITEBYTECODE is set
# (this machine image) every leapp-lab process would compile each module it imports again; a
# module edited later is compiled in memory as before (docs/verify.md, "Start-up")
"$py" -m compileall -q leapp_lab >/dev/null
echo "$py"
