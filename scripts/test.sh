#!/usr/bin/env bash
# Set up, then lint and run the whole test suite (CPU only; GPU paths are tested with fake devices and the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q "$@"
