#!/usr/bin/env bash
# Sets up .venv with the project and its test tools. A torch already installed on the machine (a CUDA build on
# a GPU machine, say) is reused; otherwise torch==2.13.0 is installed (a CPU build on these machines).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if "$python" -c "import torch" 2>/dev/null; then
    "$python" -m venv --system-site-packages .venv
  else
    "$python" -m venv .venv
  fi
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q torch==2.13.0
fi
.venv/bin/python -m pip install -q -e ".[dev]"
