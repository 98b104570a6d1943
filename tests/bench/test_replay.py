"""How a replayed round is split into graphs, and where its calls' outputs go in a row (bench/replay.py); the
replays themselves are in test_replay_gpu.py."""

import pytest
import torch

from flashinfer_bench.bench.replay import GRAPH_MOST_CALLS, graph_sizes, in_place, staged_ring
from flashinfer_bench.bench.slot import TensorLayout


@pytest.mark.parametrize("calls", [1, 5, 16, GRAPH_MOST_CALLS, GRAPH_MOST_CALLS + 1, 97, 256, 1024])
def test_a_round_replays_graphs_of_at_most_the_most_calls_that_make_it_up_in_order(calls):
    sizes = graph_sizes(calls)
    assert sum(sizes) == calls and max(sizes) <= GRAPH_MOST_CALLS
    # Full graphs first (the judge measures the harness's work on the first's size), then at most one smaller.
    assert sizes[:-1] == [min(calls, GRAPH_MOST_CALLS)] * (len(sizes) - 1) and sizes[-1] <= sizes[0]


def test_a_1024_call_round_is_sixteen_replays_of_one_graph():
    assert graph_sizes(1024) == [GRAPH_MOST_CALLS] * (1024 // GRAPH_MOST_CALLS)


def test_only_a_ring_that_rounds_replay_more_than_one_graph_into_is_filled_through_a_stage():
    assert not staged_ring(0) and not staged_ring(GRAPH_MOST_CALLS) and staged_ring(GRAPH_MOST_CALLS + 1)


def test_an_outputs_place_in_a_row_is_a_tensor_of_its_layout_on_the_rows_bytes_where_aligned():
    """A destination-passing call writes through these views straight into the row's bytes, one output after the
    other; an output after an odd number of bytes has no view of its type there (it is copied instead)."""
    layouts = [TensorLayout("a", torch.float32, (2, 3)), TensorLayout("b", torch.uint8, (3,)),
               TensorLayout("c", torch.float32, (2,))]
    row = torch.zeros(40, dtype=torch.uint8)
    a, b, c = in_place(row, layouts)
    assert c is None and a.shape == (2, 3) and a.dtype == torch.float32 and b.shape == (3,)
    a.fill_(1.5)
    b.fill_(7)
    assert torch.equal(row[:24].view(torch.float32), torch.full((6,), 1.5)) and row[24:27].tolist() == [7, 7, 7]
    assert row[27:].tolist() == [0] * 13
