#!/usr/bin/env bash
# One device run for the timer (issue 11): its GPU tests, then the fidelity benchmark against ncu with FlashInfer's
# calls. Carry .whl-min (pydantic and cupti-python wheels: ../shared/device/wheelhouse) and .fiw
# (../shared/device/flashinfer-wheel). Full logs and the JSON go to $OUT; the table is printed last.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl-min/*.whl .fiw/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi -L
python3 -m pytest -q -p no:cacheprovider -m gpu tests/timing > "$out/pytest_timing.log" 2>&1
tail -n 3 "$out/pytest_timing.log"
python3 benchmarks/timing_fidelity.py --out "$out/timing_fidelity.json" "$@" > "$out/timing_fidelity.log" 2>&1
echo "timing_fidelity: exit $?"
sed -n '/^NVIDIA\|cold L2/,$p' "$out/timing_fidelity.log" | cut -c1-200
