"""Where a worker's time goes, phase by phase: in the timing loop, and in its first calls.

This process judges (as ``timed_call_costs.py`` does); a real worker process, not sandboxed, runs ``scale_add``
through the harness at the default settings, with every phase of the harness and of the timer wrapped in a
clock. When the worker stops it prints, per phase of the timing loop: how often it ran, its median, 90th and
99th percentile and longest time, and its time per timed call (its whole time over the timed calls, so that a
phase that runs once per batch shows what it costs each call), and where its runs over ``SLOW_US`` were
(session and place in it); then each of its first correctness calls (the
new worker's first: CUDA loads a kernel's module on its first launch) split into its phases; then its loads.

``--reload``: the solution is loaded again before each evaluation, as a run loads it per item (so each evaluation
captures its graphs and sizes its buffers again); the phases of each evaluation's timing session are then listed
one by one too.

``--definition``: the definition's reference, as a solution, at a workload of ``--workloads`` (inputs drawn at
random, no blobs), at the settings given (the public dataset's: ``--warmup-runs 1 --iterations 5 --num-trials 1``).

    python benchmarks/worker_phases.py [--n 65536] [--evaluations 5] [--reload]
    python benchmarks/worker_phases.py --definition DEF.json --workloads WORKLOADS.jsonl [--workload-index I] \
        [--warmup-runs W --iterations N --num-trials T] [--evaluations 5] [--reload]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import timed_call_costs

#: (label, start ns, end ns) of every wrapped call in the worker.
EVENTS: list[tuple[str, int, int]] = []
#: A phase's runs longer than this are listed one by one.
SLOW_US = 700.0


def event_recorder(label: str):
    """What ``timed_call_costs.clocked`` hands each call's start and end: an entry in EVENTS under ``label``."""
    return lambda start, end: EVENTS.append((label, start, end))


def report() -> None:
    sessions = [(start, end) for label, start, end in EVENTS if label == "time"]
    inside: dict[str, list[float]] = {}
    for label, start, end in EVENTS:
        if label != "time" and any(s <= start and end <= e for s, e in sessions):
            inside.setdefault(label, []).append((end - start) / 1e3)
    calls = len(inside.get("call", []))
    if not calls:
        print("  worker: no timed calls")
        return
    span_us = sum(end - start for start, end in sessions) / 1e3
    print(f"  worker: {len(sessions)} timing sessions, {calls} timed calls, {span_us / calls:.1f} us per timed call")
    for label, times in sorted(inside.items(), key=lambda item: -sum(item[1])):
        q = statistics.quantiles(times, n=100) if len(times) > 2 else [times[0]] * 99
        print(f"    {label:20s} n={len(times):6d} median {statistics.median(times):8.1f} p90 {q[89]:8.1f} "
              f"p99 {q[98]:8.1f} max {max(times):9.1f} us, per timed call {sum(times) / calls:7.1f} us")
    for label in inside:
        slow = []
        for number, (start, end) in enumerate(sorted(sessions)):
            runs = sorted((s, e) for name, s, e in EVENTS if name == label and start <= s and e <= end)
            slow += [f"{number}:{place}/{len(runs)} {(e - s) / 1e3:.0f}" for place, (s, e) in enumerate(runs)
                     if (e - s) / 1e3 > SLOW_US]
        if slow:
            print(f"    {label} over {SLOW_US:.0f} us (session:run/runs us): {' '.join(slow[:24])}")
    for number, (start, end) in enumerate(sorted(sessions)):
        phases = {}
        for label, s, e in EVENTS:
            if label != "time" and start <= s and e <= end:
                phases[label] = phases.get(label, 0.0) + (e - s) / 1e6
        print(f"  session {number} {(end - start) / 1e6:7.1f} ms: "
              + ", ".join(f"{label} {ms:.1f}" for label, ms in sorted(phases.items(), key=lambda i: -i[1])[:18]))
    harness_calls = [(start, end) for label, start, end in EVENTS if label == "harness call"]
    for start, end in harness_calls[:4] + harness_calls[-3:]:
        phases: dict[str, float] = {}
        for label, s, e in EVENTS:
            if label != "harness call" and start <= s and e <= end:
                phases[label] = phases.get(label, 0.0) + (e - s) / 1e3
        print(f"  correctness call {(end - start) / 1e3:9.1f} us: "
              + ", ".join(f"{label} {us:.1f}" for label, us in phases.items()))
    loads = [(end - start) / 1e3 for label, start, end in EVENTS if label == "load"]
    print("  loads (us): " + " ".join(f"{us:.0f}" for us in loads))


def clocked_phases() -> list[tuple[object, str, str | None]]:
    """What ``phased_worker`` clocks: (owner, attribute, label: the attribute's name where None)."""
    import torch

    from flashinfer_bench.bench import harness, replay
    from flashinfer_bench.bench.calling import TimedCall
    from flashinfer_bench.bench.slot import Slot
    from flashinfer_bench.bench.worker.main import WireExchange, Worker
    from flashinfer_bench.timing import cupti_timer, lead_in

    return [
        (harness.Harness, "time", None), (harness.Harness, "call", "harness call"), (harness.Harness, "inputs", None),
        (harness.Harness, "outputs", None), (harness, "kept_copy", None), (harness, "take_values", None), (harness, "modified_inputs", None),
        (harness, "clone_inputs", None), (WireExchange, "more", None), (WireExchange, "ran", None),
        (WireExchange, "shipped", None), (Slot, "write", None), (lead_in, "spin", None), (TimedCall, "call", None),
        (torch.cuda, "synchronize", None), (cupti_timer._Session, "_set_enabled", None),
        (cupti_timer._Session, "_buffer_completed", None), (cupti_timer, "bucket_iterations", None),
        (Worker, "load", None), (harness.Harness, "_replays", None), (Slot, "reserve", None),
        (Slot, "_pin_through", None), (replay.ReplayedCalls, "__init__", "ring"), (replay.ReplayedCalls, "graph", None),
        (replay.ReplayedCalls, "run", None), (replay.ReplayedCalls, "wait", None),
        (replay.ReplayedCalls, "shipped", "gather"),
        (TimedCall, "__init__", "timed call"), (replay, "capture", None), (replay.ReplayedCalls, "_step", "step"),
        (torch.cuda, "empty_cache", None), (torch.cuda.CUDAGraph, "capture_begin", None),
        (torch.cuda.CUDAGraph, "capture_end", None), (torch.cuda.CUDAGraph, "replay", None),
    ]


def phased_worker(conn, device: str, scratch) -> None:
    """worker/main.py's worker, unsandboxed, with its phases clocked; prints where its time went when it stops."""
    from flashinfer_bench.bench.wire.judge_worker import JudgeChannel
    from flashinfer_bench.bench.worker.main import Worker

    for owner, name, label in clocked_phases():
        timed_call_costs.clocked(owner, name, event_recorder(label or name))
    try:
        Worker(JudgeChannel(conn), device, scratch, scratch).serve("none (benchmark)")
    except EOFError:
        pass
    report()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--evaluations", type=int, default=5)
    parser.add_argument("--reload", action="store_true", help="load the solution again for each evaluation")
    parser.add_argument("--definition", type=Path, help="a definition's JSON file: its reference is the solution")
    parser.add_argument("--workloads", type=Path, help="with --definition: its workloads' JSONL file")
    parser.add_argument("--workload-index", type=int, default=0, help="the workload of --workloads judged")
    parser.add_argument("--warmup-runs", type=int, help="the run's settings (default: the defaults)")
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--num-trials", type=int)
    args = parser.parse_args()
    if args.definition and not args.workloads:
        parser.error("--definition needs --workloads (the definition's workloads, a JSONL file)")
    from flashinfer_bench.bench.config import BenchmarkConfig
    from flashinfer_bench.bench.judge.context import EvaluationContext
    from flashinfer_bench.bench.runner import available_devices
    from flashinfer_bench.bench.seeds import new_run_secret
    from flashinfer_bench.data import Definition, Workload

    if args.definition:
        definition = Definition.model_validate_json(args.definition.read_text())
        lines = args.workloads.read_text().splitlines()
        workload = Workload.model_validate(json.loads(lines[args.workload_index])["workload"])
    else:
        definition = Definition.model_validate(timed_call_costs.SCALE_ADD)
        workload = Workload(uuid="w", axes={"n": args.n}, inputs={})
    settings = {name: value for name in ("warmup_runs", "iterations", "num_trials")
                if (value := getattr(args, name)) is not None}
    ctx = EvaluationContext(definition, workload, BenchmarkConfig.default(**settings).resolve(definition),
                            available_devices()[0], None, new_run_secret())
    timed_call_costs.unsandboxed_worker = phased_worker
    ms = timed_call_costs.remote_ms_per_evaluation(ctx, args.evaluations, sandboxed=False, reload=args.reload)
    print(f"remote, worker not sandboxed: {ms:.1f} ms per evaluation")


if __name__ == "__main__":
    main()
