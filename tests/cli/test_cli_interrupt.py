"""Ctrl-C as a terminal sends it: SIGINT to the run's whole process group (the CLI, the forkserver, the judges).
An interrupted (solution, workload) is never recorded as a verdict, `--resume` runs exactly what has no verdict, and
a second Ctrl-C ends the run at once with nothing half-written."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import scale_add_set

#: Each call sleeps, so an evaluation lasts long enough to be interrupted in the middle of one.
SLOW = "import time\n\n\ndef run(x, y):\n    time.sleep(0.05)\n    return x * 2 + y\n"
SOLUTIONS = {f"s{i}": SLOW for i in range(4)}
SIZES = (8, 16, 24)
FAST = ["--iterations", "3", "--warmup-runs", "1", "--num-trials", "1"]
CLI = [sys.executable, "-m", "flashinfer_bench.cli.main"]


def trace_lines(root: Path) -> list[str]:
    return [line for path in sorted((root / "traces").rglob("*.jsonl")) for line in path.read_text().splitlines()]


class Run:
    """A real `run` in a session of its own (so its process group is what a terminal would signal), its stderr
    read as it comes."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen([*CLI, "run", "--local", str(root), *FAST], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.process.stderr), daemon=True)
        self.reader.start()

    def interrupt(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + 120
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline, "".join(self.lines)
            time.sleep(0.02)

    def finish(self) -> tuple[int, str]:
        code = self.process.wait(timeout=300)
        self.reader.join(timeout=60)
        return code, "".join(self.lines)


def wait_for_traces(root: Path, run: Run, count: int) -> None:
    """Until ``count`` trace lines exist (the run is then in the middle of its work), polling."""
    deadline = time.monotonic() + 600
    while len(trace_lines(root)) < count:
        assert run.process.poll() is None, run.finish()
        assert time.monotonic() < deadline, "the run wrote no trace in 10 minutes"
        time.sleep(0.05)


def complete_and_passed(lines: list[str]) -> list[tuple[str, str]]:
    """Every line a whole trace that PASSED; the (solution, workload) of each."""
    pairs = []
    for line in lines:
        trace = json.loads(line)
        assert trace["evaluation"]["status"] == "PASSED", trace["evaluation"]["log"]
        pairs.append((trace["solution"], trace["workload"]["uuid"]))
    return pairs


@pytest.mark.slow
def test_ctrl_c_records_no_false_verdict_and_resume_runs_what_is_left(tmp_path):
    root = scale_add_set(tmp_path, SOLUTIONS, sizes=SIZES)
    run = Run(root)
    wait_for_traces(root, run, 2)
    run.interrupt()
    code, err = run.finish()
    assert code == 130, err
    assert "Traceback" not in err and "interrupted: traces already written are kept" in err
    done = complete_and_passed(trace_lines(root))
    assert len(done) == len(set(done)) and len(done) < len(SOLUTIONS) * len(SIZES)

    again = subprocess.run([*CLI, "run", "--local", str(root), *FAST, "--resume"], capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stderr
    assert f"evaluating {len(SOLUTIONS) * len(SIZES) - len(done)}" in again.stderr
    everything = complete_and_passed(trace_lines(root))
    assert sorted(everything) == sorted({(s, f"w{n}") for s in SOLUTIONS for n in SIZES})


@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once_and_leaves_only_whole_lines(tmp_path):
    root = scale_add_set(tmp_path, SOLUTIONS, sizes=SIZES)
    run = Run(root)
    wait_for_traces(root, run, 1)
    run.interrupt()
    run.wait_for("Ctrl-C again to stop at once")
    run.interrupt()
    code, err = run.finish()
    assert code == 130, err
    assert "Traceback" not in err and "stopped at once" in err
    for path in (root / "traces").rglob("*.jsonl"):
        assert path.read_text().endswith("\n")
    complete_and_passed(trace_lines(root))
