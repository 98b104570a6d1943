"""Timed calls replayed from CUDA graphs (bench/replay.py) on a real GPU (run on the GPU machine: ``pytest -m gpu``)."""

import gc
import weakref

import pytest
import torch
from helpers import SCALE_ADD, python_solution, write_trace_set

from flashinfer_bench.bench import Benchmark, BenchmarkConfig, replay
from flashinfer_bench.bench.inputs import DrawAt, InputPlan
from flashinfer_bench.bench.judge.replayed import NOT_REPLAYED_NOTE
from flashinfer_bench.bench.replay import GRAPH_MOST_CALLS, ReplayedCalls, graph_sizes
from flashinfer_bench.bench.slot import TensorLayout, from_bytes
from flashinfer_bench.data import Definition, TraceSet, Workload
from flashinfer_bench.timing.graph import GraphCaptureFailed

pytestmark = pytest.mark.gpu

MIXED = Definition.model_validate({
    "name": "mixed", "op_type": "toy",
    "axes": {"n": {"type": "var"}},
    "inputs": {name: {"shape": ["n"], "dtype": dtype} for name, dtype in
               (("a", "float32"), ("b", "bfloat16"), ("c", "float8_e4m3fn"), ("d", "int32"))},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(a, b, c, d):\n    return a\n",
})


def as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.reshape(-1).view(torch.uint8)


def kept(replayed: ReplayedCalls, row: int) -> list[torch.Tensor]:
    """The outputs the ring holds in ``row`` (the round's call of that index), as tensors of their layouts: a
    shipment of that one row."""
    return from_bytes(replayed.shipped([row])[0], replayed.layouts)


@pytest.mark.parametrize("n", [3000, 3001])
@pytest.mark.parametrize("calls", [6, 3 * GRAPH_MOST_CALLS + 5])
def test_each_replayed_call_gets_the_inputs_the_judge_draws_for_its_place_and_keeps_its_outputs_in_its_row(calls, n):
    """A round of more calls than a graph holds replays a smaller graph several times: the generator and the ring's
    row move on from one replay to the next as within one (the calls' rows through a stage; rows of 3001 * 11
    bytes padded to words)."""
    workload = Workload(uuid="w", axes={"n": n}, inputs={})
    plan = InputPlan(MIXED, workload, "cuda", None)
    assert plan.replay_obstacle is None
    inputs = plan.draw(7)
    layouts = [TensorLayout(name, t.dtype, tuple(t.shape)) for name, t in zip(MIXED.inputs, inputs, strict=True)]
    # The "outputs" kept are the inputs each call was given.
    replayed = ReplayedCalls(plan, inputs, lambda: None, lambda: inputs, layouts, ring_rows=calls)
    assert replayed.staged == (calls > GRAPH_MOST_CALLS)
    judge = InputPlan(MIXED, workload, "cuda", None)
    seen, samples = set(), []
    for seed in (11, 12):  # the second round's end is polled for from shortly before it is due (bench/waiting.py)
        replayed.run(seed, calls)
        replayed.wait()
        assert replayed.done.query() and replayed.replay_ms() > 0
        samples.append(replayed.replay_ms())
        assert replayed.least_ms_per_call == min(samples)
        for row in range(calls):
            drawn = judge.draw(DrawAt(seed, row))
            assert all(torch.equal(as_bytes(a), as_bytes(b)) for a, b in zip(kept(replayed, row), drawn, strict=True))
            seen.add(bytes(kept(replayed, row)[0].cpu().numpy()))
    assert sorted(replayed.graphs) == sorted(set(graph_sizes(calls)))
    assert len(seen) == 2 * calls
    with pytest.raises(ValueError, match="rows of its ring"):
        replayed.run(13, 2 * calls)


@pytest.mark.parametrize("piece_rows", [1, 3, 64])
def test_a_shipment_holds_the_picked_rows_bytes_one_call_after_another_in_pieces(monkeypatch, piece_rows):
    """A shipment's rows are gathered in pieces of at most SHIPPED_PIECE_BYTES (a row of its own where one is
    larger): their bytes, one piece after another, are the picked calls' kept outputs in the order picked (rows of
    3001 * 11 bytes, not whole words)."""
    workload = Workload(uuid="w", axes={"n": 3001}, inputs={})
    plan = InputPlan(MIXED, workload, "cuda", None)
    inputs = plan.draw(7)
    layouts = [TensorLayout(name, t.dtype, tuple(t.shape)) for name, t in zip(MIXED.inputs, inputs, strict=True)]
    replayed = ReplayedCalls(plan, inputs, lambda: None, lambda: inputs, layouts, ring_rows=100)
    row_bytes = 3001 * 11
    monkeypatch.setattr(replay, "SHIPPED_PIECE_BYTES", piece_rows * row_bytes - 1)
    replayed.run(3, 100)
    replayed.wait()
    picked = [97, 4, 5, 60, 0, 99, 31]
    pieces = replayed.shipped(picked)
    per_piece = max(1, piece_rows - 1)
    assert len(pieces) == -(-len(picked) // per_piece)
    shipped = torch.cat([piece.reshape(-1) for piece in pieces]).cpu()
    expected = torch.cat([as_bytes(t) for row in picked for t in kept(replayed, row)]).cpu()
    assert shipped.numel() == len(picked) * row_bytes and torch.equal(shipped, expected)


@pytest.mark.parametrize("calls", [6, 2 * GRAPH_MOST_CALLS])
def test_a_destination_passing_calls_outputs_are_written_in_its_row_where_aligned_else_copied_there(calls):
    """A destination-passing call's buffers are pointed at its row before it is made, so it writes its outputs
    where they are kept (no copy); an output whose place in the row does not start at a multiple of its element
    size (after 3 bytes) keeps its own buffer and is copied there."""
    workload = Workload(uuid="w", axes={"n": 3000}, inputs={})
    plan = InputPlan(MIXED, workload, "cuda", None)
    inputs = plan.draw(7)
    out, flag = torch.empty(3000, device="cuda"), torch.empty(3, dtype=torch.uint8, device="cuda")
    tail = torch.empty(4, device="cuda")
    own = tail.data_ptr()

    def call() -> None:
        torch.mul(inputs[0], 2, out=out)
        flag.fill_(7)
        tail.fill_(1.5)

    layouts = [TensorLayout("out", torch.float32, (3000,)), TensorLayout("flag", torch.uint8, (3,)),
               TensorLayout("tail", torch.float32, (4,))]
    replayed = ReplayedCalls(plan, inputs, call, lambda: [out, flag, tail], layouts, ring_rows=calls,
                             destinations=[out, flag, tail])
    replayed.run(5, calls)
    replayed.wait()
    stage = replayed.stage
    assert all(stage.data_ptr() <= t.data_ptr() < stage.data_ptr() + stage.numel() for t in (out, flag))
    assert tail.data_ptr() == own
    judge = InputPlan(MIXED, workload, "cuda", None)
    for row in range(calls):
        kept_out, kept_flag, kept_tail = kept(replayed, row)
        assert torch.equal(kept_out, judge.draw(DrawAt(5, row))[0] * 2)
        assert kept_flag.tolist() == [7, 7, 7] and kept_tail.tolist() == [1.5] * 4


def test_an_output_of_another_size_than_its_layout_is_not_captured():
    """A row's bytes are copied output by output: one of fewer bytes than its layout fails the capture (a copy would
    spread it over the row), and the calls are then made one at a time, where the output's shape is reported."""
    workload = Workload(uuid="w", axes={"n": 256}, inputs={})
    plan = InputPlan(MIXED, workload, "cuda", None)
    inputs = plan.draw(7)
    layouts = [TensorLayout("out", torch.float32, (256,))]
    replayed = ReplayedCalls(plan, inputs, lambda: None, lambda: [inputs[0][:1]], layouts, ring_rows=8)
    with pytest.raises(GraphCaptureFailed, match="output 'out' has 4 bytes, its layout 1024"):
        replayed.graph(8)


def test_replayed_calls_are_freed_when_dropped_with_no_garbage_collection():
    """No reference cycle keeps a harness's graphs, ring and events alive until a collection, which could run their
    finalizers inside another harness's capture (timing/graph.py ``collector_off``)."""
    workload = Workload(uuid="w", axes={"n": 256}, inputs={})
    plan = InputPlan(MIXED, workload, "cuda", None)
    inputs = plan.draw(7)
    layouts = [TensorLayout("out", torch.float32, (256,))]
    gc.disable()
    try:
        replayed = ReplayedCalls(plan, inputs, lambda: None, lambda: inputs[:1], layouts, ring_rows=8)
        replayed.run(3, 8)
        replayed.wait()
        alive = weakref.ref(replayed)
        del replayed
        assert alive() is None
    finally:
        gc.enable()


CAPTURABLE = "def run(x, y):\n    return x * 2 + y\n"
#: Reads a value back from the device: no graph can hold it, so its calls are made one at a time.
SYNCS = "def run(x, y):\n    scale = 2.0 if float(x.abs().max()) >= 0 else 1.0\n    return x * scale + y\n"
SPIN = ("import torch\n"
        "def run(x, y):\n"
        "    torch.cuda._sleep(int(200 * torch.cuda.get_device_properties(x.device).clock_rate / 1e3))\n"
        "    return x * 2 + y\n")
LIES = ("import flashinfer_bench.bench.replay as replay\n"
        "real = replay.ReplayedCalls.replay_ms\n"
        "replay.ReplayedCalls.replay_ms = lambda self: real(self) / 1000\n" + SPIN)


def test_capturable_solutions_are_timed_from_replays_a_liar_among_them_is_recorded_at_its_work(tmp_path):
    root = write_trace_set(tmp_path, [SCALE_ADD],
                           [python_solution(name, source) for name, source in
                            (("capturable", CAPTURABLE), ("syncs", SYNCS), ("spin", SPIN), ("lies", LIES))],
                           {"scale_add": ['{"definition": "scale_add", "solution": null, "evaluation": null, '
                                          '"workload": {"uuid": "w", "axes": {"n": 4096}, "inputs": {}}}\n']})
    result = Benchmark(TraceSet.from_path(root), BenchmarkConfig()).run_all(save_results=False)
    got = {t.solution: t.evaluation for t in result.traces["scale_add"]}
    assert all(e.status.value == "PASSED" for e in got.values()), {n: e.log for n, e in got.items()}
    # Replayed, or made one at a time with the log saying so (a claim's belief on a small kernel depends on how
    # quiet the host is, so only the liar's is asserted).
    assert all(NOT_REPLAYED_NOTE not in got[name].log for name in ("capturable", "spin", "lies"))
    assert NOT_REPLAYED_NOTE in got["syncs"].log
    spin, lies = got["spin"].performance.latency_ms, got["lies"].performance.latency_ms
    assert spin == pytest.approx(0.2, rel=0.3)
    assert "not believed" in got["lies"].log and lies == pytest.approx(spin, rel=0.2)
    # One replayed session timed the three trials, a round each; each of the liar's was caught.
    extra = got["spin"].performance.extra
    assert len(extra["trial_latencies_ms"]) == len(extra["timed_calls"]) == 3
    assert got["lies"].performance.extra["judge_estimated_trials"] == 3


SLOW_SYNCS = ("import time\nimport torch\ndef run(x, y):\n    time.sleep(0.12)\n"
              "    return x * 2 + y * float((y == y).all().item())\n")


def test_a_slow_solution_whose_calls_cannot_be_captured_has_no_warm_up_once_a_session_found_that(tmp_path):
    """A call of 100 ms or more: its first session asks for replays after a warm-up and gets calls made one at a
    time (the call syncs); the judge remembers it for the solution's code, and the next workload's session, made
    one at a time from the start, has no warm-up (evaluators/sessions.py)."""
    workloads = "".join('{"definition": "scale_add", "solution": null, "evaluation": null, '
                        f'"workload": {{"uuid": "{uuid}", "axes": {{"n": 4096}}, "inputs": {{}}}}}}\n'
                        for uuid in ("w1", "w2"))
    root = write_trace_set(tmp_path, [SCALE_ADD], [python_solution("slow", SLOW_SYNCS)], {"scale_add": [workloads]})
    config = BenchmarkConfig(warmup_runs=2, iterations=5, num_trials=1)
    result = Benchmark(TraceSet.from_path(root), config).run_all(save_results=False)
    logs = sorted((t.evaluation for t in result.traces["scale_add"]), key=lambda e: NOT_REPLAYED_NOTE in e.log)
    assert [e.status.value for e in logs] == ["PASSED", "PASSED"], [e.log for e in logs]
    later, first = logs
    # Its warm-up is kept (the replays it asked for begin after one); it may plan fewer timed calls, where the new
    # worker's first call, which sizes its session, paid one-off costs (CUDA's module loads) on the judge's clock.
    assert NOT_REPLAYED_NOTE in first.log and "0 warm-up" not in first.log
    assert NOT_REPLAYED_NOTE not in later.log
    assert "timing: 0 warm-up and 5 timed calls planned per session (configured: 2 and 5)" in later.log


def test_the_warm_up_replays_both_kinds_of_round_and_keeps_no_memory():
    """The judge's warm-up (bench/replay.py ``warm_up``, run as a judge starts) captures and replays its
    tiny rounds, and lets go of their graphs, rings and inputs: nothing it allocated stays held."""
    from flashinfer_bench.bench.replay import warm_up

    gc.collect()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    warm_up("cuda:0")
    gc.collect()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before
