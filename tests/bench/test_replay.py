"""How a replayed round is split into graphs (bench/replay.py); the replays themselves are in test_replay_gpu.py."""

import pytest

from flashinfer_bench.bench.replay import GRAPH_MOST_CALLS, graph_sizes


@pytest.mark.parametrize("calls", [1, 5, 16, GRAPH_MOST_CALLS, GRAPH_MOST_CALLS + 1, 97, 256, 1024])
def test_a_round_replays_graphs_of_at_most_the_most_calls_that_make_it_up_in_order(calls):
    sizes = graph_sizes(calls)
    assert sum(sizes) == calls and max(sizes) <= GRAPH_MOST_CALLS
    # Full graphs first (the judge measures the harness's work on the first's size), then at most one smaller.
    assert sizes[:-1] == [min(calls, GRAPH_MOST_CALLS)] * (len(sizes) - 1) and sizes[-1] <= sizes[0]


def test_a_1024_call_round_is_sixteen_replays_of_one_graph():
    assert graph_sizes(1024) == [GRAPH_MOST_CALLS] * (1024 // GRAPH_MOST_CALLS)
