"""A correctness call's outputs and returned inputs read out of the worker's buffer (judge/solution.py
``read_call_result``): private copies on the evaluation's device, whatever the buffer holds next."""

import pytest
import torch
from helpers import evaluation_context

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.judge.solution import call_slot_bytes, read_call_result
from flashinfer_bench.bench.slot import Slot
from flashinfer_bench.data import Definition, Workload

CONFIG = ResolvedEvalConfig(warmup_runs=1, iterations=4, num_trials=1, rtol=1e-2, atol=1e-2)
#: Two outputs, the first of an odd number of bytes, and an in/out input sent back after them.
IN_OUT = Definition.model_validate({
    "name": "in_out", "op_type": "toy", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "state": {"shape": ["n"], "dtype": "bfloat16"}},
    "outputs": {"flag": {"shape": ["n"], "dtype": "bool"}, "y": {"shape": ["n"], "dtype": "float32"}},
    "reference": "import torch\ndef run(x, state):\n    return x > 0, x * 2\n",
})


def written(slot: Slot, device: str, k: int) -> tuple[torch.Tensor, ...]:
    """What a worker's call ``k`` left in ``slot``: its outputs, then the in/out input."""
    values = (torch.arange(7, device=device) % 2 == k % 2, torch.arange(7, dtype=torch.float32, device=device) + k,
              torch.full((7,), float(k), dtype=torch.bfloat16, device=device))
    slot.write(0, list(values))
    return values


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_call_s_outputs_and_returned_inputs_stay_as_read_when_the_buffer_holds_the_next_call_s(device):
    ctx = evaluation_context(IN_OUT, Workload(uuid="w", axes={"n": 7}, inputs={}), CONFIG, device=device)
    slot = Slot.create(call_slot_bytes(ctx, 1, ["state"]))
    try:
        results = []
        for k in range(3):  # each read through the same (reused) arena on a GPU
            values = written(slot, device, k)
            results.append((values, read_call_result(ctx, slot, 1, ["state"], [])))
        for values, result in results:
            flag, y = result.outputs[0]
            assert torch.equal(flag, values[0]) and torch.equal(y, values[1])
            assert torch.equal(result.returned["state"], values[2])
            assert flag.device.type == y.device.type == result.returned["state"].device.type == device
    finally:
        slot.close()
