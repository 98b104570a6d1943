#!/usr/bin/env bash
# Makes the virtual environment $VENV (default .venv) with $PYTHON (default python3) so that it sees the torch
# that $PYTHON imports, and prints where the environment's torch comes from ("torch: none" when there is none).
#
# $PYTHON is the active environment's interpreter: a virtual environment's, a conda environment's or the
# system's. `venv --system-site-packages` shares the site-packages of the base interpreter, which is enough for
# the system's and conda's python, but not for a virtual environment's: from inside one it would see the base
# interpreter's packages, not that environment's torch. So when the new environment does not see torch, a .pth
# file in it names the folder torch was imported from (.pth folders come after the environment's own packages).
set -euo pipefail
python=${PYTHON:-python3}
venv=${VENV:-.venv}
torch_site=$("$python" -c 'import os, torch; print(os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__))))' \
  2>/dev/null || true)
if [ ! -x "$venv/bin/python" ]; then
  if [ -n "$torch_site" ]; then
    "$python" -m venv --system-site-packages "$venv"
  else
    "$python" -m venv "$venv"
  fi
fi
if [ -n "$torch_site" ] && ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$torch_site" > "$site/_flashinfer_bench_parent_torch.pth"
fi
"$venv/bin/python" -c 'import torch; print(f"torch: {torch.__version__} from {torch.__file__}")' 2>/dev/null \
  || echo "torch: none"
