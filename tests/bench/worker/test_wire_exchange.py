"""The worker's side of a timing loop's exchange with the judge (worker/main.py WireExchange)."""

from flashinfer_bench.bench.wire.judge_worker import Next, Ship
from flashinfer_bench.bench.worker.main import WireExchange


class Channel:
    """The judge's answers, in order, and what the worker sent."""

    def __init__(self, *answers) -> None:
        self.answers, self.sent = list(answers), []

    def send(self, message) -> None:
        self.sent.append(message)

    def receive(self):
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
