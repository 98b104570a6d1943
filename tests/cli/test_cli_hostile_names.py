"""Names from a trace set are printed as text, never read as rich markup: a solution named ``[bold red]x`` goes
through `run`, `summary`, `report compare` and `report visualize` as written. (A name with a closing tag such as
``[/]``, which rich refuses, holds a path separator and is refused where it is read: tests/data/test_names.py.)"""

import json
import subprocess
import sys

from helpers import SCALE_ADD, child_env, python_solution, workload_line

CLI = [sys.executable, "-m", "flashinfer_bench.cli.main"]
OK = "def run(x, y):\n    return x * 2 + y\n"
HOSTILE = ["[bold red]x", "[reverse]y[blink]", "<b>&amp;[link=https:x]z"]
FAST = ["--iterations", "2", "--warmup-runs", "1", "--num-trials", "1"]


def hostile_set(root):
    """scale_add with a correct solution under each hostile name (files named plainly: the name is the file's
    content, not its path)."""
    (root / "definitions").mkdir(parents=True)
    (root / "definitions" / "scale_add.json").write_text(json.dumps(SCALE_ADD))
    folder = root / "solutions" / "tests" / "elementwise" / "scale_add"
    folder.mkdir(parents=True)
    for index, name in enumerate(HOSTILE):
        (folder / f"s{index}.json").write_text(json.dumps(python_solution(name, OK)))
    (root / "workloads").mkdir()
    (root / "workloads" / "scale_add.jsonl").write_text(workload_line("scale_add", "w8", {"n": 8}))
    return root


def cli(*args, env=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env or child_env())


def test_markup_in_names_is_printed_as_written_by_every_command(tmp_path):
    root = hostile_set(tmp_path / "set")
    run = cli("run", "--local", str(root), *FAST)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    for name in HOSTILE:
        assert f"scale_add / {name} / w8: PASSED" in run.stderr  # the progress line
        assert name in run.stdout  # the table at the end
    summary = cli("summary", "--local", str(root))
    assert summary.returncode == 0, summary.stderr
    assert all(name in summary.stdout for name in HOSTILE)
    compare = cli("report", "compare", str(root), str(root))
    assert compare.returncode == 0, compare.stderr
    assert all(name in compare.stdout for name in HOSTILE)
    page = tmp_path / "report.html"
    visualize = cli("report", "visualize", "--local", str(root), "-o", str(page))
    assert visualize.returncode == 0, visualize.stderr
    text = page.read_text()
    assert "<b>&amp;[link" not in text and "\\u003cb\\u003e\\u0026amp;[link=https:x]z" in text  # escaped data
