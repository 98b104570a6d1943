#!/usr/bin/env bash
# One device run for the trace-set benchmark: the example under both runners, the runner/benchmark tests on the
# GPU, and the harness overhead benchmark. Needs the wheels of ../shared/device/wheelhouse in .whl (carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi -L
fib() { python3 -m flashinfer_bench.cli.main "$@"; }
for runner in persistent isolated; do
  rm -rf "/tmp/ex-$runner" && cp -r examples/trace-set "/tmp/ex-$runner"
  flag=""; [ "$runner" = isolated ] && flag="--use-isolated-runner"
  start=$(date +%s.%N)
  fib run --local "/tmp/ex-$runner" $flag > "$out/example_$runner.log" 2>&1
  echo "example ($runner): exit $? in $(echo "$(date +%s.%N) - $start" | bc) s"
  tail -n 45 "$out/example_$runner.log" | grep -vE '^\[[0-9]+/'
done
python3 -m pytest -q -p no:cacheprovider tests/bench tests/data tests/cli 2>&1 | tail -n 15
python3 benchmarks/harness_overhead.py --json "$out/overhead.json" 2>&1 | tail -n 6
