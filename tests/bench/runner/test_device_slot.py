"""DeviceSlot's bookkeeping of workers, with stand-ins for the processes (the real ones: test_process_runner.py)."""

from flashinfer_bench.bench.runner import device_slot
from flashinfer_bench.bench.runner.device_slot import QUIET_CALIBRATION_WAIT_S, SPARE_WORKERS, DeviceSlot
from flashinfer_bench.bench.worker.sandbox.policy import SandboxPolicy


class StandInWorker:
    def __init__(self, waits: list[float]) -> None:
        self.waits = waits

    def started(self, timeout: float) -> bool:
        self.waits.append(timeout)
        return True

    def kill(self, built=None) -> None:
        pass


class StandInJudge:
    def __init__(self, device: str) -> None:
        self.device = device

    def attach(self, worker: StandInWorker, timeout: float) -> str:
        return "stand-in isolation"


def test_only_the_first_worker_attached_waits_for_the_spares_to_have_started(tmp_path, monkeypatch):
    """The judge calibrates on its first item: no worker should be starting beside it."""
    waits: list[float] = []
    started: list[StandInWorker] = []

    def new_worker(self) -> StandInWorker:
        started.append(StandInWorker(waits))
        return started[-1]

    monkeypatch.setattr(device_slot, "JudgeProcess", StandInJudge)
    monkeypatch.setattr(DeviceSlot, "_new_worker", new_worker)
    slot = DeviceSlot("cpu", tmp_path, SandboxPolicy(), items_per_worker=None)
    assert len(started) == SPARE_WORKERS + 1  # the first item's worker and the spares start together
    first = slot._attached_worker(slot.judge)
    assert first is started[0] and len(started) == SPARE_WORKERS + 1  # so the first attach starts none
    assert waits == [QUIET_CALIBRATION_WAIT_S] * SPARE_WORKERS and len(slot.spares) == SPARE_WORKERS
    slot.active = None  # the next solution's item
    assert slot._attached_worker(slot.judge) is started[1]
    assert len(started) == SPARE_WORKERS + 2 and len(waits) == SPARE_WORKERS  # replaced; no wait
