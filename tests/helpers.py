"""Writing small trace sets to disk for tests."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]


def load_benchmark(name: str, monkeypatch: Any) -> Any:
    """``benchmarks/<name>.py`` as a module, registered under its name (a dataclass's module must be) with the
    benchmarks folder on the path for the modules beside it that it imports (``monkeypatch``: pytest's, which takes
    both off again)."""
    import importlib.util

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def run_benchmark(name: str, *args: str, cwd: Path | None = None,
                  timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``benchmarks/<name>.py`` with ``args``, in a child Python of this checkout (``child_env``) and ``cwd``; the
    test fails, with the script's output, where the script does."""
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / f"{name}.py"), *args], capture_output=True,
                          text=True, timeout=timeout, env=child_env(), cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done


def child_env() -> dict[str, str]:
    """The environment for a child Python that must import this checkout, keeping any PYTHONPATH entries
    (dependencies installed with ``pip --target`` live there on the GPU machine)."""
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}

SCALE_ADD = {
    "name": "scale_add",
    "op_type": "elementwise",
    "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "import torch\ndef run(x, y):\n    return x * 2 + y\n",
}


def python_solution(name: str, source: str, *, definition: str = "scale_add", dps: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "definition": definition,
        "author": "tests",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": dps},
        "sources": [{"path": "main.py", "content": source}],
    }


def workload_line(definition: str, uuid: str, axes: dict[str, int], inputs: dict[str, Any] | None = None) -> str:
    return json.dumps({"definition": definition, "solution": None, "evaluation": None,
                       "workload": {"uuid": uuid, "axes": axes, "inputs": inputs or {}}}) + "\n"


def write_trace_set(root: Path, definitions: list[dict[str, Any]], solutions: list[dict[str, Any]],
                    workloads: dict[str, list[str]]) -> Path:
    """Files where upstream's layout puts them (a name the definitions do not hold goes under op type 'other')."""
    from flashinfer_bench.data import layout

    op_types = {definition["name"]: definition.get("op_type", "other") for definition in definitions}
    for definition in definitions:
        path = layout.definition_file(root, definition.get("op_type", "other"), definition["name"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(definition, indent=2))
    for solution in solutions:
        op_type = op_types.get(solution["definition"], "other")
        path = layout.solution_file(root, solution["author"], op_type, solution["definition"], solution["name"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(solution, indent=2))
    for definition_name, lines in workloads.items():
        path = layout.workload_file(root, op_types.get(definition_name, "other"), definition_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines))
    return root


def scale_add_set(root: Path, solutions: dict[str, str], sizes: tuple[int, ...] = (8, 100)) -> Path:
    """The scale_add definition with value-returning python solutions given as {name: source}."""
    return write_trace_set(
        root,
        [SCALE_ADD],
        [python_solution(name, source) for name, source in solutions.items()],
        {"scale_add": [workload_line("scale_add", f"w{n}", {"n": n}) for n in sizes]},
    )


def evaluation_context(definition: Any, workload: Any, cfg: Any, secret: int = 1, device: str = "cpu") -> Any:
    """An EvaluationContext (on the CPU unless ``device``), with a fixed secret (the same inputs every time)."""
    from flashinfer_bench.bench.judge.context import EvaluationContext

    return EvaluationContext(definition, workload, cfg, device, None, secret)


def judged_locally(evaluator: Any, definition: Any, fn: Any, cfg: Any, workload: Any, *, dps: bool = False,
                   timed: bool = False) -> tuple[Any, Any]:
    """(correctness, performance) of ``fn`` as the judge's evaluator sees it, the harness run in-process.

    A call that cannot be judged (CallFailed) becomes the CorrectnessResult the judge would record; performance
    is None unless ``timed`` and correct (a TimedOutputsMismatch propagates)."""
    from flashinfer_bench.bench.calling import ValueReturning, reference_callee
    from flashinfer_bench.bench.evaluators.evaluator import CorrectnessResult
    from flashinfer_bench.bench.judge.local import LocalSolution
    from flashinfer_bench.bench.wire.failures import CallFailed

    ctx = evaluation_context(definition, workload, cfg)
    baseline = evaluator.build_baseline(ctx, reference_callee(definition), profile=timed)
    solution = LocalSolution(ctx, ValueReturning(fn, destination_passing_style=dps))
    try:
        correct = evaluator.check_correctness(ctx, solution, baseline)
    except CallFailed as exc:
        return CorrectnessResult(exc.status, message=exc.message), None
    if not timed or not correct.passed:
        return correct, None
    return correct, evaluator.eval_performance(ctx, solution, baseline)



def processes_named(marker: str) -> dict[int, str]:
    """The processes whose name (``/proc/PID/comm``) starts with ``marker``, by pid as this process sees them
    (value: the rest of the name), zombies included."""
    found = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = Path(f"/proc/{name}/comm").read_text().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if comm.startswith(marker):
            found[int(name)] = comm[len(marker):]
    return found


def gone(pid: int) -> bool:
    """No such process, or a zombie (dead, waiting for whoever reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in (b"Z", b"X")


def live_processes_named(marker: str) -> list[int]:
    return [pid for pid in processes_named(marker) if not gone(pid)]


def sampling_definition(vocab: int) -> Any:
    """A sampling definition over ``vocab`` tokens whose reference draws one sample per row with multinomial."""
    from flashinfer_bench.data import Definition

    return Definition.model_validate({
        "name": f"sample_v{vocab}", "op_type": "sampling",
        "axes": {"batch_size": {"type": "var"}, "vocab_size": {"type": "const", "value": vocab}},
        "inputs": {"probs": {"shape": ["batch_size", "vocab_size"], "dtype": "float32"}},
        "outputs": {"samples": {"shape": ["batch_size"], "dtype": "int64"}},
        "reference": "import torch\ndef run(probs):\n    return torch.multinomial(probs, 1).squeeze(1)\n",
    })


#: What the local Ray clusters of the tests run with: every node on the loopback address, token authentication on.
#: One token for the whole test session: a process that has imported Ray keeps the token it first read, and a
#: later cluster with another one cannot be reached from it (its GCS "fails to start").
RAY_CLUSTER_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token",
                   "RAY_AUTH_TOKEN": secrets.token_hex(16)}
