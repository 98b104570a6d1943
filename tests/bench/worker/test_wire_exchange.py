"""The worker's side of a timing loop's exchange with the judge (worker/main.py WireExchange)."""

import threading
import time

from flashinfer_bench.bench.schedstat import read_schedstat
from flashinfer_bench.bench.wire.judge_worker import Next, Ship
from flashinfer_bench.bench.worker.main import WireExchange


class Channel:
    """The judge's answers, in order, and what the worker sent."""

    def __init__(self, *answers) -> None:
        self.answers, self.sent = list(answers), []

    def send(self, message) -> None:
        self.sent.append(message)

    def receive(self, due=None):
        assert due is not None  # the judge answers at once: the worker polls for it (bench/waiting.py)
        return self.answers.pop(0)


def test_a_round_with_no_calls_picked_brings_the_next_rounds_seeds_unasked():
    channel = Channel(Ship(indices=[], seeds=[5, 6]), Ship(indices=[3]), Next(seeds=[7]), Ship(indices=[]),
                      Next(seeds=[8]))
    exchange = WireExchange(channel)
    assert exchange.ran(2, more=True) == [] and exchange.more() == [5, 6]  # no More asked
    assert exchange.ran(4, more=True) == [3]  # picked: shipped first, and the seeds asked for after
    exchange.shipped([3])
    assert exchange.more() == [7]
    assert exchange.ran(5, more=False) == [] and exchange.more() == [8]  # a batch measured again: asked for
    assert [(m.op, getattr(m, "more", None)) for m in channel.sent] == [
        ("ran", True), ("ran", True), ("shipped", None), ("more", None), ("ran", False), ("more", None)]


def test_a_replayed_rounds_seeds_come_as_its_first_and_a_count_of_zeros():
    channel = Channel(Ship(indices=[], **Ship.packed([5, 0, 0, 0])), Next(**Next.packed([9, 0])))
    exchange = WireExchange(channel)
    assert exchange.ran(1, more=True) == [] and exchange.more() == [5, 0, 0, 0]
    assert exchange.more() == [9, 0]


def test_an_answer_that_closes_a_window_says_when_it_was_sent_and_how_long_the_thread_had_waited():
    """What the judge counts of a busy host's waits in a window ends where the worker answered (judge/clock.py
    HostWatch.held_up): its clock is the judge's (CLOCK_MONOTONIC) and its waits this thread's own schedstat."""
    channel = Channel(Ship(indices=[1]))
    exchange = WireExchange(channel)
    before = time.perf_counter()
    exchange.ran(2, more=False)
    exchange.shipped([1])
    after = time.perf_counter()
    own = read_schedstat(f"/proc/self/task/{threading.get_native_id()}/schedstat")
    assert own is not None
    for message in channel.sent:
        assert before <= message.sent.at <= after
        assert message.sent.waited_ns is not None and 0 <= message.sent.waited_ns <= own[1]
