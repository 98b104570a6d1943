"""What a run costs and where its wall time goes: the gap between a run and the floor its kernels set.

Runs ``flashinfer-bench run`` (this checkout's) on a trace set, by default the embedded example, with the run's own
flags after ``--`` (results are not saved unless they say ``--save-results``), and prints:

- evaluations per hour, over the whole run and after set-up;
- the device's busy fraction: NVML's utilization (the share of time a kernel ran) sampled in a thread through
  the run, averaged over the run's devices; 'no GPU' where NVML or a GPU is missing;
- where the devices' time went (wall time times devices used): set-up (the process start to each device's first
  evaluation, which begins once its first worker is ready), then the judges' phases of every evaluation
  (bench/judge/phases.py: builds, input draws, the judge's checks, the reference, the timed sessions), and the
  rest: the judges' own time outside those phases (calibration, messages) and the parent's between evaluations
  (workers retired and attached, verdicts written), and the end of the run;
- the timed sessions split further by the judges' windows (judge/windows.py): each session's first round (the
  worker's first calls, its buffer's page-locking and, where its calls are replayed, its graphs' capture, which it
  makes ahead of the rest), its later rounds (the worker's calls and the exchange with the judge), its shipments
  of picked calls' outputs, and the rest, the judge's own work inside the sessions (copying shipped outputs out,
  picking calls, sizing rounds, its measure of the harness) while the worker waits.

    python benchmarks/run_costs.py [--local PATH] [--json OUT] [-- RUN FLAGS]
    python benchmarks/run_costs.py -- --definitions rmsnorm_h4096 --iterations 20

The phases come from the judges, one JSON line per verdict in a file the run is pointed at
(``$FLASHINFER_BENCH_PHASES_FILE``, bench/runner/phase_log.py), the windows one line per session
(``$FLASHINFER_BENCH_WINDOWS_FILE``). Needs nvidia-ml-py for the busy fraction.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flashinfer_bench.bench.judge.windows import WINDOWS_FILE_ENV
from flashinfer_bench.bench.runner.phase_log import PHASES_FILE_ENV

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "trace-set"
#: The judges' phases (fields of EvaluationPhases) and how the table names them, in its order.
PHASES = {"build_s": "builds", "draws_s": "input draws", "checks_s": "judge's checks",
          "reference_s": "reference", "timed_s": "timed sessions"}
#: The timed sessions' parts (``timed_split``) and how the table names them, under "timed sessions".
TIMED_PARTS = {"first_rounds_s": "their first rounds", "rounds_s": "their later rounds",
               "shipments_s": "their shipments", "judge_s": "the judge between"}


class Utilization:
    """NVML's GPU utilization, sampled every ``interval_s`` in a thread; ``why`` says why there is none."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.samples: dict[int, list[int]] = defaultdict(list)
        self.why: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            import pynvml
        except ImportError:
            self.why = "no GPU (nvidia-ml-py is not installed: pip install 'flashinfer-bench[nvml]')"
            return
        try:
            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except pynvml.NVMLError as error:
            self.why = f"no GPU (NVML: {error})"
            return
        if not self._handles:
            self.why = "no GPU"
            return
        self._nvml = pynvml
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            for index, handle in enumerate(self._handles):
                self.samples[index].append(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu)

    def __enter__(self) -> Utilization:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._nvml.nvmlShutdown()

    def busy(self, devices: list[str]) -> dict[str, float]:
        """Per device of the run ("cuda:i"), its mean utilization as a fraction."""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        order = [int(v) for v in visible.split(",")] if visible and visible.replace(",", "").isdigit() else None
        busy = {}
        for device in devices:
            if not device.startswith("cuda"):
                continue
            index = int(device.partition(":")[2] or 0)
            samples = self.samples.get(order[index] if order else index, [])
            if samples:
                busy[device] = sum(samples) / len(samples) / 100
        return busy


def read_lines(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's records (the phases', the windows')."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def window_sums(sessions: Sequence[dict[str, Any]]) -> tuple[list[float], float, float]:
    """Of these sessions (lines of a windows file): each one's first round's window, all their later rounds'
    windows together, and all their shipments' (ms)."""
    rounds = [[r[2] for r in session["rounds"]] for session in sessions]  # rounds: (first, calls, wall_ms, ...)
    return ([walls[0] for walls in rounds if walls], sum(sum(walls[1:]) for walls in rounds),
            sum(s[2] for session in sessions for s in session["shipments"]))


def timed_split(timed_s: float, sessions: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The timed sessions' time (``timed_s``, the judges' phase) split by their windows (``sessions``: the windows
    file's lines; the calibration's sessions, outside every phase, left out): first rounds, later rounds,
    shipments, and the rest."""
    firsts, later_ms, shipments_ms = window_sums([s for s in sessions if s["purpose"] == "timed"])
    first, later, shipments = sum(firsts) / 1e3, later_ms / 1e3, shipments_ms / 1e3
    return {"first_rounds_s": first, "rounds_s": later, "shipments_s": shipments,
            "judge_s": timed_s - first - later - shipments}


def run_costs(records: list[dict[str, Any]], started: float, ended: float,
              sessions: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The run's costs from its verdicts (with their evaluations' phases, where a judge made them), its start and
    end (``time.time()``) and its sessions' windows: see the docstring. A verdict no judge made (a timeout, a dead
    worker) counts as an evaluation; its time is in "other"."""
    wall = ended - started
    judged = [r["phases"] for r in records if r["phases"] is not None]
    devices = sorted({p["device"] for p in judged})
    setup = sum(min(p["started_at"] for p in judged if p["device"] == d) - started for d in devices)
    phases = {name: sum(p[name] for p in judged) for name in PHASES}
    device_time = wall * len(devices)
    after_setup = wall - (setup / len(devices) if devices else 0.0)
    return {
        "evaluations": len(records),
        "wall_s": wall,
        "devices": devices,
        "evaluations_per_hour": len(records) / wall * 3600 if wall > 0 else 0.0,
        "evaluations_per_hour_after_setup": len(records) / after_setup * 3600 if after_setup > 0 else 0.0,
        "device_time_s": device_time,
        "seconds": {"setup_s": setup, **phases, "other_s": device_time - setup - sum(phases.values())},
        "timed_split": timed_split(phases["timed_s"], sessions),
        "statuses": {status: sum(r["status"] == status for r in records) for status in {r["status"] for r in records}},
    }


def table(costs: dict[str, Any], busy: dict[str, float], why_no_busy: str | None) -> str:
    lines = [f"{costs['evaluations']} evaluations in {costs['wall_s']:.1f} s on {', '.join(costs['devices']) or '-'}: "
             f"{costs['evaluations_per_hour']:.0f} per hour ({costs['evaluations_per_hour_after_setup']:.0f} after "
             "set-up)"]
    if busy:
        share = sum(busy.values()) / len(busy)
        lines.append(f"device busy: {share:.1%} (" + ", ".join(f"{d} {b:.1%}" for d, b in busy.items()) + ")")
    else:
        lines.append(f"device busy: {why_no_busy or 'no GPU among the devices'}")
    names = {"setup_s": "set-up", **PHASES, "other_s": "other"}
    total = costs["device_time_s"]
    lines.append(f"{'where the time went':24s} {'seconds':>10s} {'share':>7s}")
    for name, label in names.items():
        seconds = costs["seconds"][name]
        lines.append(f"{label:24s} {seconds:10.2f} {seconds / total if total else 0.0:7.1%}")
        if name == "timed_s":
            for part, part_label in TIMED_PARTS.items():
                seconds = costs["timed_split"][part]
                lines.append(f"  {part_label:22s} {seconds:10.2f} {seconds / total if total else 0.0:7.1%}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--local", default=str(EXAMPLE), metavar="PATH", help="the trace set (default: the example)")
    parser.add_argument("--json", metavar="OUT", help="also write the figures here")
    parser.add_argument("--interval", type=float, default=0.2, metavar="S", help="NVML sampling interval")
    parser.add_argument("run_flags", nargs=argparse.REMAINDER, help="after --: flags for flashinfer-bench run")
    args = parser.parse_args()
    flags = [flag for flag in args.run_flags if flag != "--"]
    if "--save-results" not in flags:
        flags.append("--no-save-results")
    command = [sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", args.local, *flags]
    with tempfile.TemporaryDirectory(prefix="run-costs-") as scratch:
        phases_file, windows_file = Path(scratch) / "phases.jsonl", Path(scratch) / "windows.jsonl"
        phases_file.touch()
        windows_file.touch()
        path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, PHASES_FILE_ENV: str(phases_file), WINDOWS_FILE_ENV: str(windows_file),
               "PYTHONPATH": path}
        with Utilization(args.interval) as utilization:
            started = time.time()
            done = subprocess.run(command, env=env)
            ended = time.time()
        records, sessions = read_lines(phases_file), read_lines(windows_file)
    if not records:
        print(f"the run made no evaluation (exit status {done.returncode})", file=sys.stderr)
        return done.returncode or 1
    costs = run_costs(records, started, ended, sessions)
    busy = utilization.busy(costs["devices"])
    print(table(costs, busy, utilization.why))
    if args.json:
        out = {**costs, "device_busy": busy, "device_busy_why_none": utilization.why, "run_exit_status": done.returncode,
               "command": command[1:], "verdicts": records}
        Path(args.json).write_text(json.dumps(out, indent=2))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
