#!/usr/bin/env bash
# Set up, then lint and run the whole test suite (CPU only; GPU paths are tested with fake devices and the CPU).
#
# Tests run in parallel with pytest-xdist: one worker per core, at most 2 (the dataset tests may each take a third
# of the memory, and most tests start processes of their own that use the other cores), FIB_TEST_WORKERS=N to
# choose. `--dist loadfile`: a file's tests run on one worker, one after another, with the exceptions
# tests/conftest.py names (the Ray tests share one worker; the dataset tests are handed out one by one).
# Arguments go to pytest after these, so they can override them:
# `./scripts/test.sh tests/cli/test_cli_main.py::test_x -x`; `-n 0` runs in this process, one test at a time
# (for --pdb, or output printed as it comes with -s).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
.venv/bin/python -m ruff check .  # -m: a ruff the environment sees through an active one has no script here
cores=$(nproc 2>/dev/null || echo 1)
workers=${FIB_TEST_WORKERS:-$((cores < 2 ? cores : 2))}
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadfile "$@"
