"""Whether `run` goes to a Ray cluster is asked of the resolved config alone: the flag, the YAML's `ray_address`,
then `$RAY_ADDRESS` (BenchmarkConfig.cluster_address)."""

import importlib.util
import os
import subprocess
import sys

from helpers import scale_add_set

from flashinfer_bench.cli.main import build_parser, load_config

OK = "def run(x, y):\n    return x * 2 + y\n"


def test_the_yaml_ray_address_sends_the_run_to_that_cluster(tmp_path):
    """A cluster named only in the YAML is where the run goes: with nothing listening there, the run says so in one
    line and exits 2 (it used to start a local worker server and run here)."""
    root = scale_add_set(tmp_path, {"ok": OK}, sizes=(8,))
    config_file = tmp_path / "c.yaml"
    config_file.write_text("ray_address: 127.0.0.1:9\n")  # discard port: nothing answers
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    run = subprocess.run([sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(root), "--config",
                          str(config_file), "--iterations", "2", "--warmup-runs", "1", "--num-trials", "1"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    # Without the ray extra (a GPU machine's carried wheels) the run says that instead: either way the run went to
    # the cluster, not to a worker of its own.
    expected = "127.0.0.1:9" if importlib.util.find_spec("ray") is not None else "needs ray"
    assert len(errors) == 1 and expected in errors[0], run.stderr
    assert not (root / "traces").exists() or not any((root / "traces").rglob("*.jsonl"))


def test_the_flag_wins_over_the_yaml_and_the_environment(tmp_path, monkeypatch):
    config_file = tmp_path / "c.yaml"
    config_file.write_text("ray_address: yaml-host:1\n")
    monkeypatch.setenv("RAY_ADDRESS", "env-host:1")
    args = build_parser().parse_args(["run", "--local", "x", "--config", str(config_file)])
    assert load_config(args).cluster_address() == "yaml-host:1"
    args = build_parser().parse_args(["run", "--local", "x", "--config", str(config_file), "--ray-address", "flag:1"])
    assert load_config(args).cluster_address() == "flag:1"
    assert load_config(build_parser().parse_args(["run", "--local", "x"])).cluster_address() == "env-host:1"
    monkeypatch.delenv("RAY_ADDRESS")
    assert load_config(build_parser().parse_args(["run", "--local", "x"])).cluster_address() is None
