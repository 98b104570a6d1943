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
    """Calibrates on the workers it is told to (judge/main.py: the first, then one each FLOOR_KEPT_S)."""

    calibrates_on: list[bool] = []

    def __init__(self, device: str) -> None:
        self.device = device

    def attach(self, worker: StandInWorker, timeout: float) -> tuple[str, bool]:
        return "stand-in isolation", self.calibrates_on.pop(0)


def test_a_worker_the_judge_calibrates_on_waits_for_the_spares_to_have_started(tmp_path, monkeypatch):
    """No worker should be starting beside a calibration: the judge's first, and its later ones."""
    waits: list[float] = []
    started: list[StandInWorker] = []

    def new_worker(self) -> StandInWorker:
        started.append(StandInWorker(waits))
        return started[-1]

    monkeypatch.setattr(device_slot, "JudgeProcess", StandInJudge)
    monkeypatch.setattr(StandInJudge, "calibrates_on", [True, False, True])
    monkeypatch.setattr(DeviceSlot, "_new_worker", new_worker)
    slot = DeviceSlot("cpu", tmp_path, SandboxPolicy(), items_per_worker=None)
    assert len(started) == SPARE_WORKERS + 1  # the first item's worker and the spares start together
    first = slot._attached_worker(slot.judge)
    assert first is started[0] and len(started) == SPARE_WORKERS + 1  # so the first attach starts none
    assert waits == [QUIET_CALIBRATION_WAIT_S] * SPARE_WORKERS and len(slot.spares) == SPARE_WORKERS
    slot.active = None  # the next solution's item
    assert slot._attached_worker(slot.judge) is started[1]
    assert len(started) == SPARE_WORKERS + 2 and len(waits) == SPARE_WORKERS  # replaced; no wait
    slot.active = None  # a later calibration: the spares, the one started just now among them, are waited for
    assert slot._attached_worker(slot.judge) is started[2]
    assert len(started) == SPARE_WORKERS + 3 and waits[SPARE_WORKERS:] == [QUIET_CALIBRATION_WAIT_S] * SPARE_WORKERS
