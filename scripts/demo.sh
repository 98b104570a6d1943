#!/usr/bin/env bash
# The main job: set up (reusing the active environment's torch; Triton, and on a GPU cupti-python), say which
# timer is used, then benchmark the embedded example trace set on every visible GPU at the default settings,
# else on the CPU. On the CPU (host-clock timing, Triton through its interpreter) fewer timed calls are made, so
# the run takes about a minute on two cores instead of several; flags given here override that, e.g.
#   ./scripts/demo.sh --use-isolated-runner
#   ./scripts/demo.sh --iterations 50 --warmup-runs 10 --num-trials 3
# Without network (a GPU machine, say): PIP_NO_INDEX=1 PIP_FIND_LINKS=/path/to/wheels ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh demo
.venv/bin/python scripts/which_timer.py
cpu_flags=()
if ! .venv/bin/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  cpu_flags=(--warmup-runs 2 --iterations 5 --num-trials 2)
  echo "no GPU found: running on the CPU with ${cpu_flags[*]} (pass your own flags to change that)"
fi
exec .venv/bin/flashinfer-bench run --local examples/trace-set "${cpu_flags[@]}" "$@"
