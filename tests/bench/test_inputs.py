"""Random inputs: drawn in the input's own type, reproducible per (workload, trial); inputs from blobs: index
tensors as stored, floating-point tensors reordered per seed."""

import json

import pytest
import torch

from flashinfer_bench.bench.inputs import InputPlan, generate_inputs
from flashinfer_bench.data import Definition, Workload

MIXED = Definition.model_validate({
    "name": "mixed", "op_type": "toy",
    "axes": {"n": {"type": "var"}},
    "inputs": {name: {"shape": ["n"], "dtype": dtype} for name, dtype in
               (("a", "float32"), ("b", "bfloat16"), ("c", "float16"), ("d", "float8_e4m3fn"), ("e", "int32"))},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(a, b, c, d, e):\n    return a\n",
})


def test_floating_inputs_are_standard_normal_in_their_own_type():
    workload = Workload(uuid="w", axes={"n": 20000}, inputs={})
    values = generate_inputs(MIXED, workload, 0, "cpu", None)
    assert [v.dtype for v in values] == [torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.int32]
    for value in values[:4]:
        as_float = value.float()
        assert abs(float(as_float.mean())) < 0.05 and abs(float(as_float.std()) - 1) < 0.05
    again = generate_inputs(MIXED, workload, 0, "cpu", None)
    assert all(torch.equal(x.view(torch.uint8) if x.dtype == torch.float8_e4m3fn else x,
                           y.view(torch.uint8) if y.dtype == torch.float8_e4m3fn else y)
               for x, y in zip(values, again, strict=True))


def test_drawn_inputs_that_break_a_constraint_are_refused_naming_it():
    definition = Definition.model_validate({
        "name": "paged", "op_type": "gqa_paged",
        "axes": {"n": {"type": "var"}, "len_indptr": {"type": "var"}},
        "inputs": {"kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"}},
        "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
        "constraints": ["n == kv_indptr[-1].item() + 1000"],
        "reference": "def run(kv_indptr):\n    return kv_indptr\n",
    })
    workload = Workload(axes={"n": 3, "len_indptr": 2}, inputs={}, uuid="u")
    with pytest.raises(ValueError, match=r"n == kv_indptr\[-1\].item\(\) \+ 1000' is false"):
        generate_inputs(definition, workload, 0, "cpu", None)


# ------------------------------------------------------------------------------------------ inputs from blobs
#: Every input comes from one blob: x, y and col are floating-point, idx and mask index-like (the reference
#: ignores them and col).
FROM_BLOB = Definition.model_validate({
    "name": "blob_add", "op_type": "elementwise",
    "axes": {"n": {"type": "var"}, "m": {"type": "const", "value": 8}, "one": {"type": "const", "value": 1}},
    "inputs": {"x": {"shape": ["n", "m"], "dtype": "float32"}, "y": {"shape": ["n", "m"], "dtype": "bfloat16"},
               "idx": {"shape": ["n"], "dtype": "int32"}, "mask": {"shape": ["n"], "dtype": "bool"},
               "col": {"shape": ["n", "one"], "dtype": "float8_e4m3fn"}},
    "outputs": {"out": {"shape": ["n", "m"], "dtype": "float32"}},
    "reference": "def run(x, y, idx, mask, col):\n    return x * 2 + y.float()\n",
})
BLOB = "blob/workloads/elementwise/blob_add/w.safetensors"


def blob_workload(root, n: int = 16) -> Workload:
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(7)
    tensors = {"x": torch.randn(n, 8, generator=generator), "y": torch.randn(n, 8, generator=generator).bfloat16(),
               "idx": torch.randperm(n, generator=generator).int(), "mask": torch.arange(n) % 3 == 0,
               "col": torch.randn(n, 1, generator=generator).to(torch.float8_e4m3fn)}
    (root / BLOB).parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(root / BLOB))
    inputs = {name: {"type": "safetensors", "path": BLOB, "tensor_key": name} for name in tensors}
    return Workload.model_validate({"uuid": "w", "axes": {"n": n}, "inputs": inputs})


def stored(root, name: str) -> torch.Tensor:
    from safetensors.torch import load_file

    return load_file(str(root / BLOB))[name]


def as_bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.view(torch.uint8) if tensor.element_size() == 1 else tensor


def test_float_blob_inputs_vary_with_the_seed_index_inputs_stay_and_the_same_seed_gives_the_same(tmp_path):
    workload = blob_workload(tmp_path)
    plan = InputPlan(FROM_BLOB, workload, "cpu", tmp_path)
    first, second, again = plan.draw(1), plan.draw(2), plan.draw(1)
    names = list(FROM_BLOB.inputs)
    for name, a, b, c in zip(names, first, second, again, strict=True):
        blob = stored(tmp_path, name)
        assert a.shape == b.shape == blob.shape and a.dtype == b.dtype == blob.dtype, name
        assert torch.equal(as_bits(a), as_bits(c)), name  # a seed is the same inputs in the judge and the worker
        if name in ("idx", "mask"):
            assert torch.equal(a, blob) and torch.equal(b, blob), name  # the workload's structure, as stored
            continue
        assert not torch.equal(as_bits(a), as_bits(b)), name
        # The blob's own values, every one of them, rows kept whole: only their places change.
        assert torch.equal(as_bits(a).flatten().sort().values, as_bits(blob).flatten().sort().values), name
        rows = {tuple(sorted(row.tolist())) for row in as_bits(blob).reshape(blob.shape[0], -1)}
        assert {tuple(sorted(row.tolist())) for row in as_bits(a).reshape(a.shape[0], -1)} == rows, name
    # What is handed out is the caller's own: writing it changes no later draw.
    handed = plan.draw(3)
    expected = [value.clone() for value in handed]
    for value in handed:
        as_bits(value).zero_()
    assert all(torch.equal(as_bits(x), as_bits(y)) for x, y in zip(plan.draw(3), expected, strict=True))


def test_a_float_blob_input_a_constraint_names_stays_as_stored(tmp_path):
    constrained = Definition.model_validate({**FROM_BLOB.model_dump(mode="json"), "constraints": ["x.shape[1] == m"]})
    plan = InputPlan(constrained, blob_workload(tmp_path), "cpu", tmp_path)
    assert torch.equal(plan.draw(1)[0], stored(tmp_path, "x")) and torch.equal(plan.draw(2)[0], stored(tmp_path, "x"))
    assert not torch.equal(plan.draw(1)[1], plan.draw(2)[1])  # y is not named: it still varies


def test_blob_orders_leave_the_random_inputs_of_a_seed_as_they_were(tmp_path):
    """Blob orders have a stream of their own: y, drawn at random, is the same whether x is reordered or not."""
    workload = blob_workload(tmp_path)
    random_y = Workload.model_validate({**workload.model_dump(mode="json"), "inputs": {
        k: v for k, v in workload.model_dump(mode="json")["inputs"].items() if k != "y"}})
    keeps_x = Definition.model_validate({**FROM_BLOB.model_dump(mode="json"), "constraints": ["x.shape[1] == m"]})
    reordered = InputPlan(FROM_BLOB, random_y, "cpu", tmp_path).draw(5)
    kept = InputPlan(keeps_x, random_y, "cpu", tmp_path).draw(5)
    assert not torch.equal(reordered[0], kept[0]) and torch.equal(reordered[1], kept[1])


VALUE_CACHE = (
    "cache = {}\n"
    "def run(x, y, idx, mask, col):\n"
    "    key = (x.numpy().tobytes(), y.view(torch.int16).numpy().tobytes(), col.view(torch.uint8).numpy().tobytes())\n"
    "    if key in cache:\n"
    "        print('CACHE HIT', flush=True)\n"
    "        return cache[key].clone()\n"
    "    cache[key] = x * 2 + y.float()\n"
    "    return cache[key].clone()\n"
)
#: The control: a cache keyed on the index input, which stays as the workload says, does hit (and computes anyway).
INDEX_CACHE = (
    "seen = set()\n"
    "def run(x, y, idx, mask, col):\n"
    "    key = idx.numpy().tobytes()\n"
    "    if key in seen:\n"
    "        print('CACHE HIT', flush=True)\n"
    "    seen.add(key)\n"
    "    return x * 2 + y.float()\n"
)


@pytest.mark.parametrize("runner", ["persistent", "isolated"])
def test_a_value_keyed_cache_gets_no_hit_on_a_workload_whose_inputs_all_come_from_a_blob(tmp_path, runner):
    from helpers import python_solution, write_trace_set

    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.bench.runner import isolated_runner, persistent_runner
    from flashinfer_bench.data import TraceSet

    factory = {"persistent": persistent_runner, "isolated": isolated_runner}[runner]
    workload = blob_workload(tmp_path)
    line = json.dumps({"definition": "blob_add", "solution": None, "evaluation": None,
                       "workload": workload.model_dump(mode="json")}) + "\n"
    solutions = [python_solution(name, "import torch\n" + source, definition="blob_add")
                 for name, source in (("a_value_cache", VALUE_CACHE), ("b_index_cache", INDEX_CACHE))]
    root = write_trace_set(tmp_path, [FROM_BLOB.model_dump(mode="json")], solutions, {"blob_add": [line]})
    config = BenchmarkConfig(iterations=8, warmup_runs=2, num_trials=2, timeout_seconds=30)
    benchmark = Benchmark(TraceSet.from_path(root), config,
                          runner_factory=lambda c: factory(["cpu"], timeout_seconds=c.timeout_seconds))
    got = {t.solution: t.evaluation for t in benchmark.run_all(save_results=False).traces["blob_add"]}
    assert got["a_value_cache"].status.value == "PASSED" and "CACHE HIT" not in got["a_value_cache"].log
    assert got["b_index_cache"].status.value == "PASSED" and "CACHE HIT" in got["b_index_cache"].log


def test_only_plans_whose_every_draw_is_on_the_device_generator_can_be_replayed(tmp_path):
    """A CUDA graph replays device work only: inputs drawn on the host, reordered blobs, values checked against
    constraints or an init's draws would be the same in every replay (bench/replay.py)."""
    drawn = Workload(uuid="w", axes={"n": 8}, inputs={})
    assert InputPlan(MIXED, drawn, "cpu", None).replay_obstacle == "inputs are not drawn on a CUDA device"
    assert InputPlan(MIXED, drawn, "cuda:0", None).replay_obstacle is None
    scalar = Definition.model_validate({**MIXED.model_dump(mode="json"),
                                        "inputs": {"a": {"shape": None, "dtype": "float32"}},
                                        "reference": "def run(a):\n    return a\n"})
    assert InputPlan(scalar, drawn, "cuda:0", None).replay_obstacle == "scalar inputs are drawn on the host"
