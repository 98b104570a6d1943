#!/usr/bin/env bash
# One device run for the timed session (issue 30): the example trace set at the default settings through
# run_costs.py (evaluations per hour, the device's busy fraction, where the time went) with cupti-python 13.4 and
# 13.0 (the version torch 2.11+cu130's pins make pip pick), its statuses under each; the harness overhead; the
# claim bounds on a quiet host and with a busy-loop process per core (`quick`: all but the harness overhead;
# `tests`: the GPU tests of the timed session instead, each under 10 minutes of device time). Needs the wheels of
# ../shared/device/wheelhouse in .whl (nvidia-ml-py among them) and cupti-python 13.0.1's wheel in .cupti130
# (carried). Full logs go to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site130 .cupti130/*.whl || exit 1
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi -L
if [ "${1:-}" = tests ]; then
  export PYTHONPATH=/tmp/site:$PWD
  python3 -m pytest -q -p no:cacheprovider tests/bench/test_replay_gpu.py tests/timing/test_timing_gpu.py \
    tests/bench/runner/test_exploits.py tests/bench/runner/test_exploits_timed_outputs.py tests/bench/judge \
    tests/bench/test_benchmark.py -m "not ray" 2>&1 | tee "$out/gpu_tests.log" | tail -n 15
  exit "${PIPESTATUS[0]}"
fi
example() {  # cupti-python version, site folders
  export PYTHONPATH=$2:$PWD
  python3 -c "import importlib.metadata as m; print('cupti-python', m.version('cupti-python'))"
  rm -rf /tmp/ex && cp -r examples/trace-set /tmp/ex && rm -rf /tmp/ex/traces
  SECONDS=0
  python3 benchmarks/run_costs.py --local /tmp/ex --json "$out/costs_$1.json" -- --save-results > "$out/costs_$1.log" 2>&1
  echo "example at defaults, cupti-python $1: exit $? in ${SECONDS} s"; tail -n 16 "$out/costs_$1.log"
  python3 benchmarks/trace_statuses.py /tmp/ex | tail -n 3
  grep -rh "not believed" /tmp/ex/traces | wc -l | xargs echo "trace lines with a claim not believed:"
}
example 13.4 /tmp/site
export PYTHONPATH=/tmp/site:$PWD
python3 benchmarks/claim_bounds.py --json "$out/bounds_quiet.json" 2>&1 | tail -n 5
python3 benchmarks/claim_bounds.py --busy --json "$out/bounds_busy.json" 2>&1 | tail -n 5
example 13.0 /tmp/site130:/tmp/site
[ "${1:-}" = quick ] && exit 0
export PYTHONPATH=/tmp/site:$PWD
python3 benchmarks/harness_overhead.py --runners persistent --json "$out/overhead.json" 2>&1 | tail -n 4
