#!/usr/bin/env bash
# The main job: set up, then benchmark the embedded example trace set (on every visible GPU, else on the CPU).
# Extra arguments go to `flashinfer-bench run`, e.g. ./scripts/demo.sh --use-isolated-runner
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec .venv/bin/flashinfer-bench run --local examples/trace-set "$@"
