#!/usr/bin/env bash
# Sets up .venv with the project. `bootstrap.sh test` (the default) adds the test tools (the dev and ray extras) and, when
# missing, headless Chromium for the report's browser tests (Debian's package, through apt-get); `bootstrap.sh
# demo` adds Triton and, where a CUDA device is visible, the GPU extras (cupti-python, so kernels are timed from
# CUPTI's records).
#
# The torch of the active environment (a virtual or conda environment's, or the system's: a CUDA build on a GPU
# machine, say) is reused (scripts/venv_with_torch.sh); without one, torch==2.13.0 is installed. pip reads its
# usual variables: on a machine without network, PIP_NO_INDEX=1 PIP_FIND_LINKS=/path/to/wheels makes it install
# from those wheels alone (setuptools among them, to build this package).
set -euo pipefail
cd "$(dirname "$0")/.."
purpose=${1:-test}
case "$purpose" in
  test | demo) ;;
  *) echo "usage: $0 [test|demo]" >&2; exit 2 ;;
esac
./scripts/venv_with_torch.sh
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q torch==2.13.0
fi
if [ "$purpose" = demo ]; then
  .venv/bin/python -m pip install -q -e ".[triton]"
  if .venv/bin/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" \
    && ! .venv/bin/python -m pip install -q -e ".[triton,cupti]"; then
    # e.g. torch 2.11+cu130 pins nvidia-cuda-cupti 13.0.*, which the newest cupti-python does not accept
    echo "warning: the GPU extras could not be installed (above): kernels will be timed with CUDA events." \
      "Offer a cupti-python wheel that accepts this torch's nvidia-cuda-cupti through PIP_FIND_LINKS." >&2
  fi
  exit 0
fi
.venv/bin/python -m pip install -q -e ".[dev,ray]"  # ray: tests/bench/runner/test_ray_runner.py runs a local cluster
if ! command -v chromium >/dev/null 2>&1; then
  apt=()
  if [ "$(id -u)" = 0 ]; then
    apt=(apt-get)
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    apt=(sudo -n apt-get)
  fi
  if [ ${#apt[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing headless Chromium (Debian's package) for the report's browser tests"
    "${apt[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq --no-install-recommends chromium fonts-dejavu-core \
      >/dev/null
  else
    echo "warning: chromium is missing and cannot be installed here (apt-get as root, or sudo); the report's" \
      "browser tests will fail" >&2
  fi
fi
