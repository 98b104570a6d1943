"""Builds ahead of their turn (runner/prebuilder.py), seen through files: a real CLI run on the CPU whose C++
compiler is a wrapper that records, in the entry it builds, which process's scratch directory it ran in and when.

The first item (a Python solution) waits in its first call until the second item's build, done ahead by the
pre-builder, has reached the build cache: the test opens the gate only then, so that item's evaluation cannot
end before it. The second item's worker then loads the library without compiling, and a C++ solution that does
not compile is still a COMPILE_ERROR with the compiler's message (its worker builds it again)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import SCALE_ADD, child_env, python_solution, workload_line, write_trace_set

from flashinfer_bench.compile.cache import solution_dir
from flashinfer_bench.data import Solution, TraceSet

WAITS_AT_THE_GATE = """
import os, time
GATE = {gate!r}
def run(x, y):
    if not os.path.exists(GATE):
        print("waiting", time.time(), flush=True)
        deadline = time.monotonic() + 600
        while not os.path.exists(GATE) and time.monotonic() < deadline:
            time.sleep(0.05)
        print("released" if os.path.exists(GATE) else "never released", time.time(), flush=True)
    return x * 2 + y
"""
COMPILES = r"""
#include <torch/extension.h>
void run(torch::Tensor x, torch::Tensor y, torch::Tensor out) { out.copy_(x * 2 + y); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
"""
#: In a file that includes no header: the compiler stops in a fraction of a second, where parsing
#: torch/extension.h first takes half a minute (and it runs twice: ahead, then in the worker).
DOES_NOT_COMPILE = "void run(float* out) { out[0] = 2 * undeclared_thing; }\n"
#: Named c++ so that torch takes it for the system's compiler. In a build folder (``<scratch>/build/cpp/<key>/
#: .torch_ext``) it appends "<start> <end> <status>" to ``<key>/compiled-in-<scratch's name>``.
COMPILER_WRAPPER = """#!/bin/sh
here=$(pwd -P)
start=$(date +%s.%N)
g++ "$@"
status=$?
case "$here" in
  */.torch_ext)
    entry=$(dirname "$here")
    scratch=$(basename "$(dirname "$(dirname "$(dirname "$entry")")")")
    echo "$start $(date +%s.%N) $status" >> "$entry/compiled-in-$scratch" ;;
esac
exit $status
"""


def cpp_solution(name: str, source: str) -> dict:
    return {"name": name, "definition": "scale_add", "author": "tests",
            "spec": {"language": "cpp", "binding": "torch", "target_hardware": ["cpu"],
                     "entry_point": "main.cpp::run", "destination_passing_style": True},
            "sources": [{"path": "main.cpp", "content": source}]}


def compiles_in(entry: Path) -> dict[str, list[tuple[float, float, int]]]:
    """Per scratch directory name, the compiler runs recorded in a cache entry."""
    runs = {}
    for record in entry.glob("compiled-in-*"):
        lines = [line.split() for line in record.read_text().splitlines()]
        runs[record.name.removeprefix("compiled-in-")] = [(float(a), float(b), int(c)) for a, b, c in lines]
    return runs


def open_gate_when_built(library_marker_dir: Path, gate: Path, stop: threading.Event) -> None:
    while not stop.is_set() and not any(library_marker_dir.glob("*.artifact")):
        time.sleep(0.1)
    gate.touch()


@pytest.mark.slow
@pytest.mark.parametrize("isolated", [False, True], ids=["persistent", "isolated"])
def test_the_next_build_runs_while_an_item_is_evaluated(tmp_path, isolated):
    gate_dir, tool = tmp_path / "gate", tmp_path / "tool" / "bin"
    gate_dir.mkdir()
    tool.mkdir(parents=True)
    (tool / "c++").write_text(COMPILER_WRAPPER)
    (tool / "c++").chmod(0o755)
    solutions = [python_solution("a_waits", WAITS_AT_THE_GATE.format(gate=str(gate_dir / "go"))),
                 cpp_solution("b_compiles", COMPILES), cpp_solution("c_does_not_compile", DOES_NOT_COMPILE)]
    root = write_trace_set(tmp_path / "set", [SCALE_ADD], solutions,
                           {"scale_add": [workload_line("scale_add", "w64", {"n": 64})]})
    cache = tmp_path / "cache"
    compiled, broken = (Solution.model_validate(s) for s in solutions[1:])
    stop = threading.Event()
    gatekeeper = threading.Thread(target=open_gate_when_built,
                                  args=(solution_dir(compiled, cache) / ".torch_ext", gate_dir / "go", stop))
    gatekeeper.start()
    # On PYTHONPATH, the gate's folder is in the workers' view (worker_view.python_paths), read-only.
    env = {**child_env(), "CXX": str(tool / "c++"), "FLASHINFER_BENCH_CACHE_DIR": str(cache)}
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(gate_dir)])
    command = [sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(root), "--timeout", "900",
               "--iterations", "3", "--warmup-runs", "1", "--num-trials", "1", "--log-level", "INFO"]
    try:
        done = subprocess.run(command + (["--use-isolated-runner"] if isolated else []), env=env,
                              capture_output=True, text=True, timeout=1500)
    finally:
        stop.set()
        gatekeeper.join()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ahead of its turn" in done.stderr
    evaluations = {t.solution: t.evaluation for t in TraceSet.from_path(root).traces["scale_add"]}
    assert {name: e.status.value for name, e in evaluations.items()} == {
        "a_waits": "PASSED", "b_compiles": "PASSED", "c_does_not_compile": "COMPILE_ERROR"}, evaluations

    # Built once, ahead, by a builder process: its worker found the library and ran no compiler.
    runs = compiles_in(solution_dir(compiled, cache))
    assert runs and all(scratch.startswith("builder-") for scratch in runs), runs
    built_at = max(end for records in runs.values() for _, end, _ in records)
    # ... while the first item was being evaluated: it had made its first call by then, and waited for the build.
    log = evaluations["a_waits"].log.split()
    waiting, released = float(log[log.index("waiting") + 1]), float(log[log.index("released") + 1])
    assert waiting < built_at < released

    # A failed build ahead leaves nothing: the worker compiles again and reports the compiler's error.
    failed = compiles_in(solution_dir(broken, cache))
    assert any(scratch.startswith("worker-") for scratch in failed), failed
    assert all(status != 0 for records in failed.values() for _, _, status in records)
    message = evaluations["c_does_not_compile"].log
    assert "compilation failed" in message and "undeclared_thing" in message and "error" in message
