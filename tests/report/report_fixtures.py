"""Result trace sets for report tests: written to disk in the public layout, with chosen latencies, statuses and
(optionally) the spread that ``performance.extra`` carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import write_trace_set

DEFINITIONS = [
    {"name": "rmsnorm_h128", "op_type": "rmsnorm",
     "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": 128}},
     "inputs": {"x": {"shape": ["batch_size", "hidden_size"], "dtype": "float32"}},
     "outputs": {"y": {"shape": ["batch_size", "hidden_size"], "dtype": "float32"}},
     "reference": "def run(x):\n    return x\n"},
    {"name": "decode_h8", "op_type": "gqa_paged",
     "axes": {"batch_size": {"type": "var"}, "kv_len": {"type": "var"}, "head_dim": {"type": "const", "value": 64}},
     "inputs": {"q": {"shape": ["batch_size", "head_dim"], "dtype": "float32"}},
     "outputs": {"o": {"shape": ["batch_size", "head_dim"], "dtype": "float32"}},
     "reference": "def run(q):\n    return q\n"},
]
WORKLOADS = {
    "rmsnorm_h128": [{"batch_size": b} for b in (1, 4, 16, 64, 256)],
    "decode_h8": [{"batch_size": b, "kv_len": k} for b in (1, 8) for k in (512, 4096)],
}
#: solution -> (definition, author, latency factor against the reference)
SOLUTIONS = {
    "rms_ref": ("rmsnorm_h128", "flashinfer", 1.0),
    "rms_triton": ("rmsnorm_h128", "alice", 0.5),
    "rms_cuda": ("rmsnorm_h128", "bob", 0.8),
    "dec_ref": ("decode_h8", "flashinfer", 1.0),
    "dec_triton": ("decode_h8", "alice", 0.4),
    "dec_broken": ("decode_h8", "bob", 1.0),
}
ENVIRONMENT = {"hardware": "NVIDIA H100 80GB HBM3", "libs": {"torch": "2.9.0", "triton": "3.5.0", "cuda": "13.0"}}
SETTINGS = {"warmup_runs": 10, "iterations": 50, "num_trials": 3}


def workload_uuid(definition: str, axes: dict[str, int]) -> str:
    return definition + "-" + "-".join(f"{k}{v}" for k, v in sorted(axes.items()))


def reference_ms(axes: dict[str, int]) -> float:
    return 0.004 * (1 + sum(axes.values()) / 64)


def status_of(solution: str, axes: dict[str, int]) -> str:
    if solution == "dec_broken":
        return "COMPILE_ERROR"
    if solution == "rms_cuda" and axes["batch_size"] == 256:
        return "INCORRECT_NUMERICAL"
    return "PASSED"


def result_line(definition: str, solution: str, axes: dict[str, int], status: str, latency: float | None,
                reference: float, *, spread: float | None, timestamp: str = "2026-11-20T10:00:00",
                judge_estimated_trials: int = 0) -> str:
    """One result trace as the tool writes it; ``spread`` (relative) adds performance.extra, and with it
    ``judge_estimated_trials`` when some."""
    performance = None
    if status == "PASSED":
        assert latency is not None
        performance = {"latency_ms": latency, "reference_latency_ms": reference, "speedup_factor": reference / latency}
        if spread is not None:
            performance["extra"] = {
                "timing_method": "cupti", "samples": 150, "latency_std_ms": latency * spread,
                "latency_ci95_ms": [latency * (1 - spread), latency * (1 + spread)],
                "trial_latencies_ms": [latency * (1 - spread / 2), latency, latency * (1 + spread / 2)],
                "reference_ci95_ms": [reference * (1 - spread), reference * (1 + spread)],
                "settings": SETTINGS,
            }
            if judge_estimated_trials:
                performance["extra"]["judge_estimated_trials"] = judge_estimated_trials
    correctness = ({"max_relative_error": 0.0, "max_absolute_error": 0.0, "extra": None}
                   if status in ("PASSED", "INCORRECT_NUMERICAL") else None)
    log = "" if status == "PASSED" else f"{status}: what went wrong <script>alert(1)</script>"
    return json.dumps({
        "definition": definition,
        "workload": {"axes": axes, "inputs": {}, "uuid": workload_uuid(definition, axes)},
        "solution": solution,
        "evaluation": {"status": status, "environment": ENVIRONMENT, "timestamp": timestamp, "log": log,
                       "correctness": correctness, "performance": performance},
    }, separators=(",", ":")) + "\n"


def write_results_set(root: Path, *, spread: float | None = 0.01, change: dict[str, float] | None = None,
                      broken: set[tuple[str, int]] = frozenset(), judge_bounded: set[str] = frozenset()) -> Path:
    """The definitions, solutions and workloads above, and one result trace per (solution, workload).

    ``change`` multiplies a solution's latencies; ``broken`` turns (solution, batch_size) to INCORRECT_NUMERICAL;
    the latencies of ``judge_bounded`` solutions were set by the judge's clock in one trial of each evaluation.
    """
    change = change or {}
    solutions = [{"name": name, "definition": definition, "author": author,
                  "spec": {"language": "python", "target_hardware": ["cuda"], "entry_point": "main.py::run",
                           "destination_passing_style": False},
                  "sources": [{"path": "main.py", "content": "def run(x):\n    return x\n"}]}
                 for name, (definition, author, _) in SOLUTIONS.items()]
    workloads = {name: [json.dumps({"definition": name, "solution": None, "evaluation": None,
                                    "workload": {"axes": axes, "inputs": {}, "uuid": workload_uuid(name, axes)}}) + "\n"
                        for axes in all_axes] for name, all_axes in WORKLOADS.items()}
    write_trace_set(root, DEFINITIONS, solutions, workloads)
    op_types = {d["name"]: d["op_type"] for d in DEFINITIONS}
    for name, (definition, author, factor) in SOLUTIONS.items():
        lines = []
        for axes in WORKLOADS[definition]:
            status = status_of(name, axes)
            if (name, axes["batch_size"]) in broken:
                status = "INCORRECT_NUMERICAL"
            reference = reference_ms(axes)
            latency = reference * factor * change.get(name, 1.0)
            lines.append(result_line(definition, name, axes, status, latency, reference, spread=spread,
                                     judge_estimated_trials=1 if name in judge_bounded else 0))
        path = root / "traces" / author / op_types[definition] / f"{definition}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as handle:
            handle.writelines(lines)
    return root


def load_json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def make_trace(definition: str, solution: str, workload: str, status: str = "PASSED", latency: float = 1.0,
               reference: float = 2.0, *, timestamp: str = "2026-11-20T10:00:00", extra: dict[str, Any] | None = None,
               axes: dict[str, int] | None = None) -> Any:
    """A result Trace in memory; ``reference`` 0 means the reference was not timed (speed-up 0, as upstream)."""
    from flashinfer_bench.data import Trace

    line = json.loads(result_line(definition, solution, axes or {"n": 1}, status, latency, reference or 1.0,
                                  spread=None, timestamp=timestamp))
    line["workload"]["uuid"] = workload
    performance = line["evaluation"]["performance"]
    if performance is not None:
        if not reference:
            performance.update(reference_latency_ms=0.0, speedup_factor=0.0)
        if extra is not None:
            performance["extra"] = extra
    return Trace.model_validate(line)
