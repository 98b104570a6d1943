"""FlashInfer's own definition dumps through the harness: for every definition that can run here, its reference
as a solution must pass against itself and a copy whose outputs are 25% off must not; every other definition
says in one line why it cannot run here.

The dumps have no workloads: each definition gets one, made by its ``init`` (``definition_code.workload_from_init``,
with the lengths below for the axes ``init`` needs), and every input is drawn from ``init`` when it runs. The
scratch trace set holds the definitions as read (``definition_text``), that workload, and the two solutions of
``tools.reference_solutions``; it is run with the Python API (``Benchmark``) in one run over every definition
that passed the checks below (one runner start), after each definition's work was listed on its own, so a
definition the harness cannot take is said in one line and does not stop the others. The checks, made here first:
it must load, have an ``init``, have a reference that can be called (``reference_problem``), and its ``init``
and reference must run once on this device; the first that fails is the one line of why.

    python benchmarks/flashinfer_dumps_check.py --out dumps_check.json            # every definition, on the GPU
    python benchmarks/flashinfer_dumps_check.py --device cpu --definitions rmsnorm_h4096 softmax_v32000
    python benchmarks/flashinfer_dumps_check.py --definitions 'moe_*' 'gqa_*'      # in parts, by glob

Prints one line per definition as soon as it is known (``reference PASSED, perturbed INCORRECT_NUMERICAL``, or
``cannot run: why``; for a definition with a ``check``, also what its check says of both, run in-process): those
that cannot run while the checks go on, the others as the harness gives both solutions' verdicts. Then the
counts; writes the same as JSON to ``--out``. ``--timeout`` bounds each (solution, workload) in the harness and
each definition's checks here (its ``init``, reference and ``check`` run in-process): a definition that takes
longer cannot run, saying so. Exit status 1 when a definition that ran is not as expected.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT_DUMPS = REPO.parent / "shared" / "corpus" / "flashinfer-dumps"
#: The length given to each axis ``init`` needs (its var axes), unless named here.
AXIS_LENGTHS = {"batch_size": 4, "num_tokens": 8, "seq_len": 16, "qo_len": 8, "kv_len": 64, "nnz": 16, "M": 16}
DEFAULT_LENGTH = 4
#: As benchmarks/dataset_check.py runs MoE: 95% of elements within tolerance.
OP_TYPE_CONFIG = {"moe": {"required_matched_ratio": 0.95}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dumps", type=Path, default=DEFAULT_DUMPS, help="FlashInfer's dumps (definitions/)")
    parser.add_argument("--definitions", nargs="+", help="only these definitions, by name or glob (default: all)")
    parser.add_argument("--device", default=None, help="cuda:0 or cpu (default: cuda:0 when there is a GPU)")
    parser.add_argument("--out", type=Path, help="write the JSON summary here")
    parser.add_argument("--workdir", type=Path, help="build the trace set here (kept) instead of a temp folder")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds per (solution, workload), and for each definition's checks here")
    return parser.parse_args(argv)


def selected(name: str, patterns: list[str] | None) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


@contextlib.contextmanager
def time_limit(seconds: int):
    """TimeoutError in this (the main) thread once ``seconds`` have passed (raised when Python code runs next)."""
    def expire(signum, frame):
        raise TimeoutError(f"took more than {seconds} s here (--timeout)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def why_not(definition, device: str):
    """(workload, None) when the definition can be run on ``device``, else (None, one line of why)."""
    from flashinfer_bench.bench.definition_code import (
        call_reference,
        reference_problem,
        required_init_axes,
        run_init,
        workload_from_init,
    )

    if definition.init is None:
        return None, "no init and no workloads: nothing to draw inputs from"
    problem = reference_problem(definition)
    if problem is not None:
        return None, problem
    try:
        axes = {axis: AXIS_LENGTHS.get(axis, DEFAULT_LENGTH) for axis in required_init_axes(definition)}
        workload = workload_from_init(definition, axes, seed=0, device=device)
        call_reference(definition, run_init(definition, workload.axes, 1, device).values)
    except Exception as exc:  # the one line of why: init or reference failing on this device
        return None, " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return workload, None


def check_verdicts(definition, workload, device: str) -> str | None:
    """What the definition's own ``check`` says of the reference's outputs and of the perturbed copy's (made the
    way ``tools.reference_solutions`` perturbs them), in-process; None for a definition without a check."""
    if definition.check is None:
        return None
    import torch

    from flashinfer_bench.bench.definition_code import call_reference, run_init
    from flashinfer_bench.bench.evaluators.definition_check import run_check
    from flashinfer_bench.tools import reference_solutions

    namespace = {"torch": torch}
    exec(reference_solutions._PERTURB.format(factor=reference_solutions.PERTURBATION), namespace)
    made = run_init(definition, workload.axes, 2, device)
    expected = call_reference(definition, made.values)
    again = call_reference(definition, run_init(definition, workload.axes, 2, device).values)
    off = namespace["_perturbed"](expected)
    same, perturbed = run_check(definition, made.values, again, expected), run_check(definition, made.values, off,
                                                                                     expected)
    return (f"check {'passes' if same.passed else 'FAILS'} the reference, "
            f"{'PASSES' if perturbed.passed else 'fails'} the perturbed copy")


def prepare(root: Path, definition, workload) -> None:
    from flashinfer_bench.data import Trace
    from flashinfer_bench.data.definition_file import definition_text
    from flashinfer_bench.tools.reference_solutions import write_solutions

    path = root / "definitions" / definition.op_type / f"{definition.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(definition_text(definition))
    line = Trace(definition=definition.name, workload=workload, solution=None, evaluation=None).to_json_line()
    workloads = root / "workloads" / definition.op_type / f"{definition.name}.jsonl"
    workloads.parent.mkdir(parents=True, exist_ok=True)
    workloads.write_text(line)
    write_solutions(root, definition)


def _failure(exc: Exception) -> str:
    """One line: where in this project the exception was raised, and what it says."""
    frames = traceback.extract_tb(exc.__traceback__)
    frame = next((f for f in reversed(frames) if "flashinfer_bench" in f.filename), frames[-1] if frames else None)
    where = f" at {Path(frame.filename).parent.name}/{Path(frame.filename).name}:{frame.lineno}" if frame else ""
    return f"the harness failed on it{where}: " + " ".join(traceback.format_exception_only(exc)[-1].split())[:300]


def _config(names: list[str], opts: argparse.Namespace):
    from flashinfer_bench.bench.config import BenchmarkConfig

    return BenchmarkConfig.default(definitions=names, profile_baseline=False, warmup_runs=0, iterations=1,
                                   num_trials=1, timeout_seconds=opts.timeout, op_type_config=OP_TYPE_CONFIG)


def _status(trace) -> str:
    status = trace.evaluation.status.value
    if status not in ("PASSED", "INCORRECT_NUMERICAL"):
        status += ": " + " ".join(trace.evaluation.log.split())[-200:]
    return status


class Verdicts:
    """The Benchmark's progress reporter: each definition's solutions' statuses, handed to ``done`` the moment
    both of its solutions have one (the rest, with what they have, when the run finishes)."""

    def __init__(self, names: list[str], expected: int, done) -> None:
        self.statuses: dict[str, dict[str, str]] = {name: {} for name in names}
        self.expected, self.done, self.reported = expected, done, set()

    def start(self, total: int) -> None:
        pass

    def advance(self, trace) -> None:
        seen = self.statuses.setdefault(trace.definition, {})
        seen[trace.solution] = _status(trace)
        if len(seen) >= self.expected and trace.definition not in self.reported:
            self.reported.add(trace.definition)
            self.done(trace.definition, seen)

    def finish(self) -> None:
        for name, seen in self.statuses.items():
            if name not in self.reported:
                self.reported.add(name)
                self.done(name, seen)


def run_all(root: Path, names: list[str], opts: argparse.Namespace, done, refuse) -> None:
    """One Benchmark over the definitions (one runner start); ``done(name, statuses)`` is called for each as its
    solutions' verdicts come, ``refuse(name, why)`` for each the harness could not even list and group work for."""
    from flashinfer_bench.bench import Benchmark
    from flashinfer_bench.data import TraceSet

    trace_set = TraceSet.from_path(root)
    accepted = []
    for name in names:  # listing and grouping the work reads each definition (its evaluator, its tensors' sizes)
        try:
            Benchmark(trace_set, _config([name], opts)).work_groups()
        except Exception as exc:
            refuse(name, _failure(exc))
        else:
            accepted.append(name)
    if accepted:
        progress = Verdicts(accepted, expected=2, done=done)  # the reference and its perturbed copy
        Benchmark(trace_set, _config(accepted, opts), progress=progress).run_all(save_results=True)


def line(name: str, row: dict) -> str:
    if not row["ran"]:
        return f"{name}  cannot run: {row['why']}"
    verdict = "as expected" if row["as_expected"] else "NOT as expected"
    own = f"; {row['check']}" if "check" in row else ""
    return f"{name}  reference {row['reference']}, perturbed {row['perturbed']}  ({verdict}){own}"


def check(opts: argparse.Namespace, root: Path) -> dict[str, dict]:
    """Every selected definition's row, each printed (and flushed) the moment it is known."""
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.tools.reference_solutions import perturbed_solution_name, reference_solution_name

    rows: dict[str, dict] = {}

    def say(name: str, row: dict) -> None:
        rows[name] = row
        print(line(name, row), flush=True)

    dumps = TraceSet.from_path(opts.dumps)
    for problem in dumps.problems:
        name = Path(problem.path or "?").stem
        if selected(name, opts.definitions):
            say(name, {"ran": False, "why": f"does not load: {problem.expected}"})
    ready: dict[str, dict] = {}
    for name, definition in sorted(dumps.definitions.items()):
        if not selected(name, opts.definitions):
            continue
        try:
            with time_limit(opts.timeout):
                workload, why = why_not(definition, opts.device)
        except TimeoutError as exc:  # between the steps why_not says in one line itself
            workload, why = None, f"TimeoutError: {exc}"
        if workload is None:
            say(name, {"ran": False, "why": why})
            continue
        prepare(root, definition, workload)
        ready[name] = {"axes": workload.axes}
        try:
            with time_limit(opts.timeout):
                verdicts = check_verdicts(definition, workload, opts.device)
        except Exception as exc:  # the check's own failure, said in one line
            verdicts = "check could not run: " + " ".join(traceback.format_exception_only(exc)[-1].split())[:200]
        if verdicts is not None:
            ready[name]["check"] = verdicts

    def done(name: str, seen: dict[str, str]) -> None:
        definition = dumps.definitions[name]
        reference = seen.get(reference_solution_name(definition), "no trace")
        perturbed = seen.get(perturbed_solution_name(definition), "no trace")
        say(name, {"ran": True, **ready[name], "reference": reference, "perturbed": perturbed,
                   "as_expected": reference == "PASSED" and not perturbed.startswith("PASSED")})

    start = time.perf_counter()
    run_all(root, sorted(ready), opts, done, lambda name, why: say(name, {"ran": False, "why": why}))
    print(f"harness run: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.device is None:
        import torch

        opts.device = "cuda:0" if torch.cuda.is_available() else "cpu"
    root = opts.workdir or Path(tempfile.mkdtemp(prefix="dumps_check_"))
    try:
        rows = check(opts, root)
    finally:
        if opts.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    ran = [row for row in rows.values() if row["ran"]]
    good = sum(row["as_expected"] for row in ran)
    print(f"\n{len(rows)} definitions on {opts.device}: {len(ran)} ran, {good} as expected "
          f"(reference PASSED, perturbed not), {len(ran) - good} not; {len(rows) - len(ran)} cannot run here")
    if opts.out:
        opts.out.write_text(json.dumps({"device": opts.device, "definitions": rows}, indent=2))
    return 0 if good == len(ran) else 1


if __name__ == "__main__":
    sys.exit(main())
