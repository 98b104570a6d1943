"""The timing loop's exchange with the judge (bench/harness.py Harness.time), on the CPU."""

import torch
from helpers import SCALE_ADD

from flashinfer_bench.bench.calling import ValueReturning
from flashinfer_bench.bench.harness import Harness
from flashinfer_bench.bench.replay import ReplayShape
from flashinfer_bench.bench.slot import Slot
from flashinfer_bench.data import Definition, Workload


class Rounds:
    """The judge's side: rounds of two seeds, no call picked; records each round's end."""

    def __init__(self) -> None:
        self.ends, self.next_seed = [], 100

    def more(self) -> list[int]:
        self.next_seed += 2
        return [self.next_seed - 2, self.next_seed - 1]

    def ran(self, count: int, more: bool, replay: bool = False) -> list[int]:
        assert not replay  # nothing is replayed on the CPU
        self.ends.append((count, more))
        return []

    def shipped(self, indices: list[int]) -> None:
        raise AssertionError("no call was picked")


def test_a_round_says_more_calls_follow_only_where_they_follow_at_once():
    """Within the warm-up and within the timed calls the next round's seeds may come with the judge's answer; not
    at the warm-up's end (the timer works on its records before the timed calls: between rounds) nor at the end.
    Replays asked for on the CPU: the calls are made one at a time, and the judge is told so."""
    harness = Harness(Definition.model_validate(SCALE_ADD), Workload(uuid="w", axes={"n": 8}, inputs={}), "cpu",
                      None, ValueReturning(lambda x, y: torch.add(y, x, alpha=2)))
    rounds = Rounds()
    claim = harness.time(4, 4, [1, 2], rounds, Slot(bytearray(64)), replay=ReplayShape(2, 2, 2))
    assert len(claim.samples_ms) == 4
    assert rounds.ends == [(2, True), (4, False), (6, True), (8, False)]
