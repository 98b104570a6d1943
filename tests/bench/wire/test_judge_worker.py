"""Messages between the judge and a worker (wire/judge_worker.py), over a real pipe."""

import threading
import time
from multiprocessing import Pipe

from flashinfer_bench.bench.wire.judge_worker import JudgeChannel, More, Next, Ship, WorkerChannel, encode


def test_a_replayed_rounds_seeds_go_as_its_first_and_a_count_of_zeros_and_come_back_whole():
    seeds = [123456789, *[0] * 1023]
    packed = Next(**Next.packed(seeds))
    assert packed.seeds == [123456789] and packed.zeros == 1023 and packed.round_seeds() == seeds
    assert len(encode(packed)) < 64
    assert Next(**Next.packed([0, 0])).round_seeds() == [0, 0]  # a first seed of 0 is still sent
    assert Ship(indices=[], **Ship.packed([])).round_seeds() == []
    assert Next(**Next.packed([4, 0, 5])).round_seeds() == [4, 0, 5]  # only the zeros at the end are counted


def test_a_message_due_soon_is_polled_for_and_one_that_comes_later_is_still_received():
    judge_end, worker_end = Pipe()
    judge, worker = WorkerChannel(judge_end), JudgeChannel(worker_end)
    worker.send(More())
    assert isinstance(judge.receive(More), More)
    sender = threading.Timer(0.02, lambda: judge.send(Next(**Next.packed([7, 0, 0]))))
    sender.start()
    assert worker.receive(due=time.perf_counter()).round_seeds() == [7, 0, 0]  # past its polling: it waits on
    judge.send(Next(seeds=[8]))
    assert worker.receive(due=time.perf_counter() + 0.01).round_seeds() == [8]
    sender.join()
