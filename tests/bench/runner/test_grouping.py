"""Grouping work for the devices: blocks of workloads whose baselines a judge can hold, solution after solution."""

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.runner.grouping import baseline_bytes, group_items, workload_blocks
from flashinfer_bench.bench.wire.parent_judge import MAX_WORKLOADS_PER_GROUP, WorkItem
from flashinfer_bench.data import Definition, Solution, Workload

SCALE = Definition.model_validate({
    "name": "scale", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "bfloat16"}},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(x, y):\n    return x\n",
})


def workload(n: int) -> Workload:
    return Workload(uuid=f"n{n}", axes={"n": n}, inputs={})


def solution(name: str) -> Solution:
    return Solution.model_validate({
        "name": name, "definition": "scale", "author": "t",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run"},
        "sources": [{"path": "main.py", "content": f"def run(x, y):\n    return x  # {name}\n"}],
    })


def test_baseline_bytes_count_every_trials_inputs_and_outputs():
    assert baseline_bytes(SCALE, workload(10), num_trials=3) == 3 * (10 * 4 + 10 * 2 + 10 * 4)


def test_blocks_hold_at_most_the_limit_and_fit_the_budget():
    workloads = [workload(n) for n in (10, 10, 10, 1000, 10)]
    per = baseline_bytes(SCALE, workload(10), 1)
    blocks = workload_blocks(SCALE, workloads, 1, budget=3 * per, limit=2)
    assert [[w.uuid for w in b] for b in blocks] == [["n10", "n10"], ["n10"], ["n1000"], ["n10"]]
    # a workload over the budget on its own is a block of its own, never dropped
    assert [[w.uuid for w in b] for b in workload_blocks(SCALE, workloads, 1, budget=per, limit=8)] == [
        ["n10"], ["n10"], ["n10"], ["n1000"], ["n10"]]


def test_groups_are_solution_major_within_a_block_of_one_definition():
    config = BenchmarkConfig().resolve(SCALE)
    workloads = [workload(n) for n in range(1, MAX_WORKLOADS_PER_GROUP + 3)]
    items = [WorkItem(SCALE, solution(s), w, config, None) for w in workloads for s in ("a", "b")]
    groups = group_items(items)
    assert [len(g) for g in groups] == [2 * MAX_WORKLOADS_PER_GROUP, 4]
    first = [(i.solution.name, i.workload.axes["n"]) for i in groups[0]]
    assert first == [("a", n) for n in range(1, MAX_WORKLOADS_PER_GROUP + 1)] + [
        ("b", n) for n in range(1, MAX_WORKLOADS_PER_GROUP + 1)]
    key = lambda i: (i.solution.name, i.workload.uuid)  # noqa: E731
    assert sorted(key(i) for g in groups for i in g) == sorted(key(i) for i in items)  # nothing lost or repeated
    # each item names its group's workloads, whose references the judge times before the first solution loads
    assert [[w.uuid for w in i.group] for g in groups for i in g] == [
        [w.uuid for w in workloads[:MAX_WORKLOADS_PER_GROUP]]] * (2 * MAX_WORKLOADS_PER_GROUP) + [
        [w.uuid for w in workloads[MAX_WORKLOADS_PER_GROUP:]]] * 4


def test_fewer_groups_than_devices_are_halved_until_each_device_has_one():
    config = BenchmarkConfig().resolve(SCALE)
    items = [WorkItem(SCALE, solution(s), workload(n), config, None) for n in range(1, 6) for s in ("a", "b")]
    groups = group_items(items, devices=3)
    assert [sorted({i.workload.axes["n"] for i in g}) for g in groups] == [[1, 2], [3], [4, 5]]
    assert all([i.solution.name for i in g] == sorted(i.solution.name for i in g) for g in groups)
    # one workload cannot be split: fewer groups than devices then
    assert len(group_items(items[:2], devices=4)) == 1


def test_a_tensor_of_a_type_chosen_at_run_time_is_sized_as_the_widest_not_a_crash():
    """FlashInfer's "unknown" dtype (index arrays whose type is chosen at plan time): the estimate of what the judge
    holds counts 8 bytes an element instead of failing the whole run."""
    from flashinfer_bench.bench.runner.grouping import OPEN_DTYPE_ITEMSIZE, baseline_bytes
    from flashinfer_bench.data import Definition, Workload

    definition = Definition.model_validate({
        "name": "gather", "op_type": "gather", "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "index": {"shape": ["n"], "dtype": "unknown"}},
        "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
        "reference": "def run(x, index):\n    return x\n", "tags": ["fi_api:flashinfer.gather"]})
    workload = Workload(uuid="w", axes={"n": 10}, inputs={})
    assert baseline_bytes(definition, workload, 2) == 2 * (10 * 4 + 10 * OPEN_DTYPE_ITEMSIZE + 10 * 4)
