"""What `run` checks before it evaluates: typos in flags and config names are errors with a suggestion (exit 2),
a mistyped --local is reported before any worker starts, a trace set with nothing to run says why, and
--fail-on-failure gives CI an exit status."""

import pytest
from helpers import REPO, SCALE_ADD, python_solution, scale_add_set, workload_line, write_trace_set

from flashinfer_bench.bench.config import EXTRA_KEYS, BenchmarkConfig, EvalConfig
from flashinfer_bench.bench.config_check import known_extra_keys, name_problems
from flashinfer_bench.bench.evaluators import DefaultEvaluator, register_evaluator
from flashinfer_bench.bench.evaluators.registry import _EVALUATORS
from flashinfer_bench.cli.main import main

OK = "def run(x, y):\n    return x * 2 + y\n"
WRONG = "def run(x, y):\n    return x * 3 + y\n"
FAST = ["--iterations", "2", "--warmup-runs", "1", "--num-trials", "1"]


def rmsnorm_set(root):
    definition = dict(SCALE_ADD, name="rmsnorm_h4096", op_type="rmsnorm")
    return write_trace_set(root, [definition], [python_solution("rmsnorm_h4096_triton", OK, definition="rmsnorm_h4096")],
                           {"rmsnorm_h4096": [workload_line("rmsnorm_h4096", "w1", {"n": 4})]})


@pytest.mark.parametrize(("flags", "expected"), [
    (["--definitions", "rmsnorm_h4069"], "--definitions: 'rmsnorm_h4069' is not a definition of the trace set(s); "
                                         "did you mean 'rmsnorm_h4096'?"),
    (["--solutions", "rmsnorm_h4096_trition"], "--solutions: 'rmsnorm_h4096_trition' is not a solution of the trace "
                                               "set(s); did you mean 'rmsnorm_h4096_triton'?"),
])
def test_a_mistyped_name_in_a_flag_is_status_2_with_a_suggestion(tmp_path, capsys, flags, expected):
    root = rmsnorm_set(tmp_path / "set")
    assert main(["run", "--local", str(root), *flags, *FAST]) == 2
    err = capsys.readouterr().err
    assert f"error: {expected}" in err
    assert not (root / "traces").exists()  # nothing ran


def test_mistyped_names_in_the_yaml_are_status_2_each_on_its_line(tmp_path, capsys):
    root = rmsnorm_set(tmp_path / "set")
    config = tmp_path / "c.yaml"
    config.write_text("extra:\n  timed_check_probabilty: 0.5\nop_type_config:\n  rmsnrom:\n    rtol: 0.1\n"
                      "  sampling:\n    extra:\n      sampling_significanse: 0.001\n"
                      "definition_config:\n  rmsnorm_h4069:\n    rtol: 0.1\n")
    assert main(["run", "--local", str(root), "--config", str(config), *FAST]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 4, lines
    assert all(f"{config}: field '" in line for line in lines)
    text = "\n".join(lines)
    assert "'definition_config.rmsnorm_h4069'" in text and "did you mean 'rmsnorm_h4096'?" in text
    assert "'op_type_config.rmsnrom'" in text and "did you mean 'rmsnorm'?" in text
    assert "'op_type_config.sampling.extra.sampling_significanse'" in text and "'sampling_significance'" in text
    assert "'extra.timed_check_probabilty'" in text and "'timed_check_probability'" in text
    assert not (root / "traces").exists()


def test_the_bundled_config_and_correct_names_pass():
    config = BenchmarkConfig.default(definitions=["rmsnorm_h4096"], solutions=["a"],
                                     definition_config={"rmsnorm_h4096": EvalConfig(extra={"timed_check_probability": 1})})
    assert name_problems(config, {"rmsnorm_h4096": "rmsnorm"}, {"a"}) == []
    # an op type the trace set holds may be tuned even when it is not a known one
    custom = BenchmarkConfig(op_type_config={"histogram": EvalConfig(rtol=0.5)})
    assert name_problems(custom, {"h": "histogram"}, set()) == []
    assert [p.field for p in name_problems(custom, {}, set())] == ["op_type_config.histogram"]


def test_every_extra_key_an_evaluator_reads_is_declared():
    """Each `extra.get("...")` in the bundled evaluators names a key of EXTRA_KEYS."""
    import re
    from pathlib import Path

    import flashinfer_bench.bench.evaluators as evaluators

    read = set()
    for source in Path(evaluators.__file__).parent.glob("*.py"):
        read |= set(re.findall(r"config\.extra\.get\(\s*[\"'](\w+)[\"']", source.read_text()))
        read |= set(re.findall(r"cfg\.extra(?:\.get\(|\[)\s*[\"'](\w+)[\"']", source.read_text()))
    assert read and read <= set(EXTRA_KEYS), read - set(EXTRA_KEYS)


def test_a_custom_evaluator_declares_its_extra_keys():
    class HistogramEvaluator(DefaultEvaluator):
        extra_keys = ("histogram_slack",)

        @classmethod
        def can_evaluate(cls, definition):
            return definition.op_type == "histogram"

    config = BenchmarkConfig(extra={"histogram_slack": 2})
    assert [p.field for p in name_problems(config, {}, set())] == ["extra.histogram_slack"]
    register_evaluator(HistogramEvaluator)
    try:
        assert "histogram_slack" in known_extra_keys()
        assert name_problems(config, {}, set()) == []
    finally:
        _EVALUATORS.remove(HistogramEvaluator)


def test_a_mistyped_local_path_is_reported_before_any_worker_starts(tmp_path, capsys, monkeypatch):
    import flashinfer_bench.bench.runner.server as server

    def no_workers():
        raise AssertionError("the worker server was started for a path that does not exist")

    monkeypatch.setattr(server, "start_worker_server", no_workers)
    assert main(["run", "--local", str(tmp_path / "exmaples")]) == 2
    assert capsys.readouterr().err == (f"error: {tmp_path / 'exmaples'}: expected a trace-set folder (with "
                                       "definitions/, solutions/, workloads/)\n")


def test_a_trace_set_without_solutions_says_why_nothing_runs(tmp_path, capsys):
    root = write_trace_set(tmp_path / "set", [SCALE_ADD], [], {"scale_add": [workload_line("scale_add", "w", {"n": 4})]})
    assert main(["run", "--local", str(root), *FAST]) == 0
    out = capsys.readouterr().out
    assert f"nothing to evaluate: {root}/solutions holds no solution (the public dataset ships without them)" in out


def test_fail_on_failure_gives_ci_an_exit_status(tmp_path, capsys):
    root = scale_add_set(tmp_path / "set", {"good": OK, "bad": WRONG}, sizes=(8,))
    assert main(["run", "--local", str(root), *FAST]) == 0  # opt-in: without the flag a failed solution is data
    assert main(["run", "--local", str(root), *FAST, "--fail-on-failure"]) == 1
    assert "failure: 1 evaluation(s) of this run did not pass" in capsys.readouterr().err
    good = scale_add_set(tmp_path / "good", {"good": OK}, sizes=(8,))
    assert main(["run", "--local", str(good), *FAST, "--fail-on-failure"]) == 0


def test_the_public_dataset_as_shipped_says_why_nothing_runs(capsys):
    """The real FlashInfer-Trace dataset (definitions and workloads, no solutions), read in place."""
    corpus = REPO.parent / "shared" / "corpus" / "flashinfer-trace"
    if not corpus.is_dir():
        pytest.skip(f"{corpus} is not on this machine")
    assert main(["run", "--local", str(corpus), "--no-save-results"]) == 0
    out = capsys.readouterr().out
    assert f"nothing to evaluate: {corpus}/solutions holds no solution (the public dataset ships without them)" in out
