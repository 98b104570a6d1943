#!/usr/bin/env bash
# One device run for the trace-set benchmark and timing: the runner, judge, worker (sandbox) and benchmark tests
# on the GPU (the exploit suite among them), the tests marked gpu, the example trace set under both runners
# with its statuses per (definition, solution, workload), and the harness overhead. Needs the wheels of
# ../shared/device/wheelhouse in .whl (carried). Full logs go to $OUT. `quick` as the first argument leaves out
# the harness overhead benchmark.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi -L
SECONDS=0
python3 -m pytest -q -p no:cacheprovider -x tests/bench/runner tests/bench/worker tests/bench/judge \
  tests/bench/test_benchmark.py tests/cli/test_cli_interrupt.py -m "not ray" > "$out/pytest.log" 2>&1
echo "runner/worker/judge tests on the GPU (${SECONDS} s):"; tail -n 4 "$out/pytest.log"
SECONDS=0
python3 -m pytest -q -p no:cacheprovider -m gpu tests > "$out/pytest_gpu.log" 2>&1
echo "gpu-marked tests (${SECONDS} s):"; tail -n 3 "$out/pytest_gpu.log"
for runner in persistent isolated; do
  rm -rf "/tmp/ex-$runner" && cp -r examples/trace-set "/tmp/ex-$runner" && rm -rf "/tmp/ex-$runner/traces"
  flag=""; [ "$runner" = isolated ] && flag="--use-isolated-runner"
  SECONDS=0
  python3 -m flashinfer_bench.cli.main run --local "/tmp/ex-$runner" $flag > "$out/example_$runner.log" 2>&1
  echo "example ($runner): exit $? in ${SECONDS} s"
  python3 benchmarks/trace_statuses.py "/tmp/ex-$runner" | tee "$out/statuses_$runner.txt"
done
[ "${1:-}" = quick ] || python3 benchmarks/harness_overhead.py --json "$out/overhead.json" 2>&1 | tail -n 4
