"""Where a run's wall time goes outside its evaluations, seen from the parent: the public dataset's run (as
``dataset_check.py`` prepares it) made in this process, with timers around the device slot's steps.

Prints, per step (``DeviceSlot.run``, ``JudgeProcess.evaluate``, ``JudgeProcess.attach``: the wait for the next
worker to be ready, ``DeviceSlot._show``: a change of the workers' view, ...), how often it ran and its time in
all; how far into the run the first item started; and for every attach, how long the worker had been starting
and how long the attach waited for it.

    python benchmarks/attach_waits.py --definitions rmsnorm_h128 gemm_n128_k2048
    python benchmarks/attach_waits.py --leave-out mla_paged_prefill_causal_h16_ckv512_kpe64_ps1

The run's processes are started from a forkserver, which imports this script again: everything runs under
``main``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import tempfile
import time
from pathlib import Path

#: The steps timed, by class.
SLOT_STEPS = ("_ready_judge", "_attached_worker", "_retire_active", "_wait_retired", "_show", "run", "close")
JUDGE_STEPS = ("attach", "evaluate", "wait_ready", "detach")


def parse_args() -> argparse.Namespace:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dataset_check import DEFAULT_CORPUS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the dataset (definitions/, workloads/)")
    parser.add_argument("--definitions", nargs="+", help="only these definitions (default: all with workloads)")
    parser.add_argument("--leave-out", nargs="+", default=[], help="definitions not run")
    parser.add_argument("--max-workloads-per-definition", type=int, default=2, metavar="N")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    import dataset_check

    from flashinfer_bench.bench.runner import device_slot, process
    from flashinfer_bench.cli.main import main as cli_main
    from flashinfer_bench.data import TraceSet

    names = args.definitions or sorted(TraceSet.from_path(args.corpus).workloads)
    names = [name for name in names if name not in args.leave_out]
    scratch = tempfile.TemporaryDirectory(prefix="attach-waits-")
    root = Path(scratch.name) / "trace-set"
    prepared = dataset_check.prepare(root, args.corpus, names, args.max_workloads_per_definition)
    (root / "config.yaml").write_text(dataset_check.CONFIG)

    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    started: list[float] = []

    def timed(cls: type, name: str) -> None:
        step = getattr(cls, name)

        @functools.wraps(step)
        def clocked(*a, **k):
            begun = time.perf_counter()
            if name == "run" and not started:
                started.append(begun)
            try:
                return step(*a, **k)
            finally:
                total = totals[f"{cls.__name__}.{name}"]
                total[0] += 1
                total[1] += time.perf_counter() - begun

        setattr(cls, name, clocked)

    for name in SLOT_STEPS:
        timed(device_slot.DeviceSlot, name)
    for name in JUDGE_STEPS:
        timed(process.JudgeProcess, name)
    born: dict[int, float] = {}
    attaches: list[tuple[float, float]] = []
    start_worker, attach = process.WorkerProcess.__init__, process.JudgeProcess.attach

    def stamped_start(self, *a, **k):
        born[id(self)] = time.perf_counter()
        start_worker(self, *a, **k)

    def stamped_attach(self, worker, *a, **k):
        begun = time.perf_counter()
        try:
            return attach(self, worker, *a, **k)
        finally:
            ended = time.perf_counter()
            attaches.append((ended - born[id(worker)], ended - begun))

    process.WorkerProcess.__init__ = stamped_start
    process.JudgeProcess.attach = stamped_attach

    # dataset_check.py's run, at its default settings.
    argv = dataset_check.run_arguments(root, list(prepared), dataset_check.parse_args([]))
    begun = time.perf_counter()
    code = cli_main(argv)
    wall = time.perf_counter() - begun
    print(f"run: exit {code} in {wall:.2f} s; its first item started {started[0] - begun:.2f} s in" if started
          else f"run: exit {code} in {wall:.2f} s; no item ran")
    for step, (count, seconds) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"{step:32s} {int(count):5d} times {seconds:8.2f} s")
    waited = [wait for _, wait in attaches]
    print(f"attaches: {len(attaches)}, waited {sum(waited):.2f} s in all")
    print("each attach, the worker's start to attached and the wait (s): "
          + " ".join(f"{age:.2f}/{wait:.2f}" for age, wait in attaches))
    scratch.cleanup()
    return code


if __name__ == "__main__":
    sys.exit(main())
