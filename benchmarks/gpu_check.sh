#!/usr/bin/env bash
# One device run for the trace-set benchmark and timing: the CUPTI span probe, the harness overhead
# benchmark, the runner/benchmark tests on the GPU, and the example under the persistent runner (add
# "isolated" as the first argument to run it under both). Needs the wheels of ../shared/device/wheelhouse in
# .whl (carried). Full logs go to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi -L
python3 benchmarks/cupti_span_probe.py 2>&1 | tee "$out/cupti_span_probe.log" | tail -n 6
python3 benchmarks/harness_overhead.py --json "$out/overhead.json" 2>&1 | tail -n 4
python3 -m pytest -q -p no:cacheprovider tests/bench/runner tests/bench/test_benchmark.py > "$out/pytest.log" 2>&1
tail -n 6 "$out/pytest.log"
runners=(persistent); [ "${1:-}" = isolated ] && runners+=(isolated)
for runner in "${runners[@]}"; do
  rm -rf "/tmp/ex-$runner" && cp -r examples/trace-set "/tmp/ex-$runner"
  flag=""; [ "$runner" = isolated ] && flag="--use-isolated-runner"
  SECONDS=0
  python3 -m flashinfer_bench.cli.main run --local "/tmp/ex-$runner" $flag > "$out/example_$runner.log" 2>&1
  echo "example ($runner): exit $? in ${SECONDS} s"
  grep -E "done:|│" "$out/example_$runner.log" | cut -c1-150
done
