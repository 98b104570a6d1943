import json
import subprocess
import sys

from helpers import SCALE_ADD, python_solution, scale_add_set, workload_line, write_trace_set

from flashinfer_bench.cli.main import build_parser, load_config, main

OK = "def run(x, y):\n    return x * 2 + y\n"
WRONG = "def run(x, y):\n    return x * 3 + y\n"
FAST = ["--iterations", "2", "--warmup-runs", "1", "--num-trials", "1"]


def test_flags_override_the_yaml(tmp_path):
    config_file = tmp_path / "c.yaml"
    config_file.write_text("iterations: 9\nrtol: 0.5\ntimeout_seconds: 11\n")
    args = build_parser().parse_args(["run", "--local", "x", "--config", str(config_file), "--iterations", "4",
                                      "--timeout", "7", "--use-isolated-runner", "--definitions", "a", "b"])
    config = load_config(args)
    assert (config.iterations, config.rtol, config.timeout_seconds) == (4, 0.5, 7)
    assert config.use_isolated_runner is True and config.definitions == ["a", "b"]
    config = load_config(build_parser().parse_args(["run", "--local", "x"]))
    assert config.use_isolated_runner is False and "moe" in config.op_type_config


def test_a_bad_file_is_one_line_the_rest_runs_and_status_is_2(tmp_path, capsys):
    root = scale_add_set(tmp_path, {"ok": OK}, sizes=(8,))
    other = dict(SCALE_ADD, name="other")
    write_trace_set(root, [other], [python_solution("other_ok", OK, definition="other")],
                    {"other": [workload_line("other", "o1", {"n": 4})]})
    (root / "definitions" / "elementwise" / "scale_add.json").write_text("{")
    assert main(["run", "--local", str(root), *FAST]) == 2
    err = capsys.readouterr().err
    bad_lines = [line for line in err.splitlines() if line.startswith("error: ") and "scale_add.json" in line]
    assert len(bad_lines) == 1 and "EOF" in bad_lines[0]
    assert "other / other_ok / o1: PASSED" in err  # the other definition still ran


def test_bad_config_is_status_2(tmp_path, capsys):
    root = scale_add_set(tmp_path, {"ok": OK})
    config_file = tmp_path / "c.yaml"
    config_file.write_text("num_trials: 0\n")
    assert main(["run", "--local", str(root), "--config", str(config_file)]) == 2
    assert "num_trials" in capsys.readouterr().err


def test_run_then_summary_and_best_as_a_user_would(tmp_path):
    root = scale_add_set(tmp_path, {"good": OK, "bad": WRONG}, sizes=(8, 16))
    cli = [sys.executable, "-m", "flashinfer_bench.cli.main"]
    run = subprocess.run([*cli, "run", "--local", str(root), *FAST], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "[4/4]" in run.stderr and "done: 4 evaluations" in run.stderr  # plain progress lines off a terminal
    assert "good" in run.stdout and "2/2" in run.stdout and "INCORRECT_NUMERICAL 2" in run.stdout
    lines = (root / "traces" / "tests" / "elementwise" / "scale_add.jsonl").read_text().splitlines()
    assert {json.loads(line)["solution"] for line in lines} == {"good", "bad"}

    again = subprocess.run([*cli, "run", "--local", str(root), "--resume", *FAST], capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert "nothing to evaluate: every (solution, workload) pair already has a trace" in again.stdout

    summary = subprocess.run([*cli, "summary", "--local", str(root)], capture_output=True, text=True, timeout=120)
    assert summary.returncode == 0 and "scale_add" in summary.stdout and "bad" in summary.stdout
    best = subprocess.run([*cli, "best", "--local", str(root)], capture_output=True, text=True, timeout=120)
    assert best.returncode == 0 and "good" in best.stdout and "bad" not in best.stdout
    for report in ("summary", "best"):  # upstream's spelling
        same = subprocess.run([*cli, "report", report, "--local", str(root)], capture_output=True, text=True, timeout=120)
        assert same.returncode == 0 and same.stdout == (summary if report == "summary" else best).stdout


def test_missing_folder_is_status_2(tmp_path, capsys):
    assert main(["summary", "--local", str(tmp_path / "nope")]) == 2
    assert "expected a trace-set folder" in capsys.readouterr().err


def test_routine_subcommand_is_the_routine_benchmark(capsys):
    code = main(["routine", "--routine", "bmm_fp8", "--backends", "torch", "--batch_size", "2", "--m", "4", "--n", "32",
                 "--k", "64", "--input_dtype", "fp8_e4m3", "--mat2_dtype", "fp8_e4m3", "--out_dtype", "bfloat16",
                 "--num_iters", "2", "--dry_run_iters", "1", "--refcheck"])
    out = capsys.readouterr().out
    assert code == 0
    assert "[PERF] torch     :: median time" in out
