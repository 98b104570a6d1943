import json

import pytest
from helpers import SCALE_ADD, python_solution, scale_add_set, workload_line, write_trace_set

from flashinfer_bench.bench import Benchmark, BenchmarkConfig, ConfigNameError
from flashinfer_bench.bench.evaluators import CorrectnessResult, DefaultEvaluator, register_evaluator
from flashinfer_bench.bench.evaluators.registry import _EVALUATORS
from flashinfer_bench.bench.runner import available_devices
from flashinfer_bench.data import EvaluationStatus, TraceSet

CONFIG = BenchmarkConfig(iterations=3, warmup_runs=1, num_trials=1, timeout_seconds=30)
OK = "def run(x, y):\n    return x * 2 + y\n"


class CountsLinesOnDisk:
    """A progress reporter that reads the trace file each time a verdict is reported."""

    def __init__(self, path) -> None:
        self.path, self.counts = path, []

    def start(self, total: int) -> None:
        pass

    def advance(self, trace) -> None:
        self.counts.append(len(self.path.read_text().splitlines()) if self.path.exists() else 0)

    def finish(self) -> None:
        pass


def test_run_all_returns_input_plus_new_traces_and_appends_each_at_once(tmp_path):
    root = scale_add_set(tmp_path, {"a_ok": OK, "b_ok": OK}, sizes=(8,))
    trace_set = TraceSet.from_path(root)
    progress = CountsLinesOnDisk(root / "traces" / "tests" / "elementwise" / "scale_add.jsonl")
    result = Benchmark(trace_set, CONFIG, progress=progress).run_all(save_results=True)
    assert result is not trace_set and trace_set.traces == {}
    assert set(result.definitions) == set(trace_set.definitions) and result.workloads == trace_set.workloads
    assert progress.counts == [1, 2]  # each trace was on disk when its verdict was reported, before the next ran


def test_a_passed_trace_keeps_how_its_latency_was_measured_and_how_noisy_it_was(tmp_path):
    from flashinfer_bench.report.noise import read_spread

    root = scale_add_set(tmp_path, {"ok": OK}, sizes=(64,))
    config = CONFIG.model_copy(update={"num_trials": 3, "iterations": 6})
    Benchmark(TraceSet.from_path(root), config).run_all(save_results=True)
    line = json.loads(next((root / "traces").rglob("*.jsonl")).read_text().splitlines()[0])
    extra = line["evaluation"]["performance"]["extra"]
    spread = read_spread(TraceSet.from_path(root).traces["scale_add"][0].evaluation.performance)
    assert len(extra["trial_latencies_ms"]) == 3 and extra["settings"]["iterations"] == 6
    assert len(extra["judge_clock_ms"]) == 3 and all(ms >= 0 for ms in extra["judge_clock_ms"])
    assert "reference_ci95_ms" in extra and "setup_latency_ms" not in extra  # timed here; no setup
    # Every believed trial's samples. A trial whose claim the judge did not believe keeps none (on a heavily loaded
    # host that can happen to an honest solution, to every trial): the trace says so, and how this test ends does
    # not depend on how busy the host is.
    believed = 3 - extra.get("judge_estimated_trials", 0)
    if believed == 0:
        assert not {"timing_method", "samples", "latency_ci95_ms"} & extra.keys()
        assert spread.judge_estimated_trials == 3 and "not believed" in line["evaluation"]["log"]
        return
    # The default runner uses this machine's devices: the host clock on the CPU, CUPTI (or events) on a GPU. A
    # sample is a call's time, or on a GPU where the calls were replayed (bench/replay.py) a replay's time per call:
    # one session replays every trial, a round each (judge/replayed.py RAMP_ROUNDS).
    methods = {"host_clock"} if available_devices() == ["cpu"] else {"cupti", "cuda_events"}
    assert extra["timing_method"] in methods
    assert extra["samples"] == believed * (6 if extra["timing_method"] != "cuda_events" else 1)
    assert extra["timed_calls"][0] >= 6
    low, high = extra["latency_ci95_ms"]
    assert 0 < low <= high and extra["latency_std_ms"] >= 0
    assert spread.samples == extra["samples"] and spread.relative_noise(line["evaluation"]["performance"]["latency_ms"]) > 0


def test_no_save_results_writes_nothing(tmp_path):
    root = scale_add_set(tmp_path, {"ok": OK}, sizes=(8,))
    result = Benchmark(TraceSet.from_path(root), CONFIG).run_all(save_results=False)
    assert len(result.traces["scale_add"]) == 1
    assert not (root / "traces").exists()


def test_resume_skips_traced_pairs(tmp_path):
    root = scale_add_set(tmp_path, {"ok": OK}, sizes=(8, 16))
    Benchmark(TraceSet.from_path(root), CONFIG.with_overrides(definitions=["scale_add"])).run_all()
    (root / "solutions" / "tests" / "elementwise" / "scale_add" / "new.json").write_text(json.dumps(python_solution("new", OK)))
    with_new_workload = workload_line("scale_add", "w32", {"n": 32})
    with open(root / "workloads" / "elementwise" / "scale_add.jsonl", "a") as handle:
        handle.write(with_new_workload)
    trace_set = TraceSet.from_path(root)
    benchmark = Benchmark(trace_set, CONFIG)
    groups = benchmark.work_groups(resume=True)
    # one definition, so one group, solution after solution
    assert [[(i.solution.name, i.workload.uuid) for i in g] for g in groups] == [
        [("new", "w8"), ("new", "w16"), ("new", "w32"), ("ok", "w32")]]
    result = benchmark.run_all(resume=True)
    assert len(result.traces["scale_add"]) == 6


def test_filters_select_definitions_and_solutions(tmp_path):
    root = scale_add_set(tmp_path, {"a": OK, "b": OK}, sizes=(8,))
    config = CONFIG.with_overrides(solutions=["b"])
    assert [[i.solution.name for i in g] for g in Benchmark(TraceSet.from_path(root), config).work_groups()] == [["b"]]
    config = CONFIG.with_overrides(definitions=["scale_add"], solutions=["a"])
    assert [[i.solution.name for i in g] for g in Benchmark(TraceSet.from_path(root), config).work_groups()] == [["a"]]


def test_names_the_trace_set_does_not_hold_are_an_error_with_a_did_you_mean_before_anything_runs(tmp_path):
    root = scale_add_set(tmp_path, {"fast_triton": OK, "b": OK}, sizes=(8,))
    trace_set = TraceSet.from_path(root)
    started = []
    config = CONFIG.with_overrides(definitions=["scale_ad"], solutions=["fast_trition", "b"],
                                   definition_config={"scale_addd": {"iterations": 2}})
    with pytest.raises(ConfigNameError) as raised:
        Benchmark(trace_set, config, runner_factory=lambda c: started.append(c)).run_all(save_results=True)
    assert [p.field for p in raised.value.problems] == ["definitions", "solutions", "definition_config.scale_addd"]
    lines = str(raised.value).splitlines()
    assert lines[0] == (f"config: field 'definitions': 'scale_ad' is not a definition of the trace set(s); "
                        f"did you mean 'scale_add'? ({root})")
    assert "'fast_trition' is not a solution of the trace set(s); did you mean 'fast_triton'?" in lines[1]
    assert started == [] and not (root / "traces").exists()
    # The same names with check_names=False: the caller checked them over several trace sets (as `run` does).
    assert Benchmark(trace_set, config, check_names=False).work_items() == []


class MarksEverythingWrong(DefaultEvaluator):
    """A custom evaluator, as the docs show: registered, then chosen for op_type 'custom'."""

    extra_keys = ("my_param",)

    @classmethod
    def can_evaluate(cls, definition):
        return definition.op_type == "custom"

    @classmethod
    def check_correctness(cls, ctx, solution, baseline):
        threshold = ctx.config.extra.get("my_param", 0)
        return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, message=f"custom evaluator said no ({threshold})")


@pytest.mark.parametrize("profile_baseline", [True, False])
def test_custom_evaluator_is_used_by_judges(tmp_path, profile_baseline):
    """Also where the reference is not timed, and the judge has the worker make the first correctness call beside
    it: this evaluator never takes that call up, and the worker's next item is judged all the same."""
    definition = dict(SCALE_ADD, op_type="custom")
    root = write_trace_set(tmp_path, [definition], [python_solution("ok", OK)],
                           {"scale_add": [workload_line("scale_add", w, {"n": 8}) for w in ("w1", "w2")]})
    register_evaluator(MarksEverythingWrong, first=True)
    try:
        config = CONFIG.with_overrides(op_type_config={"custom": {"extra": {"my_param": 7}}})
        config = config.model_copy(update={"profile_baseline": profile_baseline})
        result = Benchmark(TraceSet.from_path(root), config).run_all(save_results=False)
    finally:
        _EVALUATORS.remove(MarksEverythingWrong)
    assert len(result.traces["scale_add"]) == 2
    for trace in result.traces["scale_add"]:
        assert trace.evaluation.status is EvaluationStatus.INCORRECT_NUMERICAL
        assert "custom evaluator said no (7)" in trace.evaluation.log


def test_a_workload_that_cannot_run_gets_a_runtime_error_per_solution_and_the_rest_runs(tmp_path):
    blob = {"x": {"type": "safetensors", "path": "blob/missing.safetensors", "tensor_key": "x"}}
    root = write_trace_set(tmp_path / "set", [SCALE_ADD], [python_solution("a", OK), python_solution("b", OK)],
                           {"scale_add": [workload_line("scale_add", "missing", {"n": 4}, blob),
                                          workload_line("scale_add", "fine", {"n": 4})]})
    result = Benchmark(TraceSet.from_path(root), CONFIG).run_all(save_results=True)
    by_key = {(t.workload.uuid, t.solution): t.evaluation for t in result.traces["scale_add"]}
    for solution in ("a", "b"):
        evaluation = by_key[("missing", solution)]
        assert evaluation.status is EvaluationStatus.RUNTIME_ERROR
        assert "the workload cannot run" in evaluation.log and "missing.safetensors does not exist" in evaluation.log
        assert evaluation.correctness is None and evaluation.performance is None
        assert by_key[("fine", solution)].status is EvaluationStatus.PASSED
    assert len(TraceSet.from_path(root).traces["scale_add"]) == 4


def test_untimed_references_verdicts_with_the_first_call_made_beside_the_reference(tmp_path):
    """With the reference not timed (``profile_baseline: false``) a workload's first correctness call runs in the
    worker while the judge works out the reference's outputs (judge/main.py): the verdicts are those of calls made one
    after the other, and a workload whose reference fails leaves the worker's channel in step for the next one."""
    definition = {**SCALE_ADD, "reference": ("def run(x, y):\n    if x.shape[0] == 13:\n"
                                             "        raise ValueError('no reference here')\n    return x * 2 + y\n")}
    solutions = {"ok": OK, "off": "def run(x, y):\n    return x * 3 + y\n",
                 "crash": "def run(x, y):\n    raise RuntimeError('crashed')\n"}
    root = write_trace_set(tmp_path / "set", [definition], [python_solution(n, s) for n, s in solutions.items()],
                           {"scale_add": [workload_line("scale_add", f"n{n}", {"n": n}) for n in (8, 13, 64)]})
    config = CONFIG.model_copy(update={"profile_baseline": False})
    result = Benchmark(TraceSet.from_path(root), config).run_all(save_results=False)
    by_key = {(t.solution, t.workload.uuid): t.evaluation for t in result.traces["scale_add"]}
    assert len(by_key) == 9
    for solution, status in [("ok", EvaluationStatus.PASSED), ("off", EvaluationStatus.INCORRECT_NUMERICAL),
                             ("crash", EvaluationStatus.RUNTIME_ERROR)]:
        for uuid in ("n8", "n64"):
            assert by_key[(solution, uuid)].status is status, by_key[(solution, uuid)].log
        failed = by_key[(solution, "n13")]
        assert failed.status is EvaluationStatus.RUNTIME_ERROR and "no reference here" in failed.log
    assert "crashed" in by_key[("crash", "n64")].log
    assert by_key[("ok", "n64")].performance.reference_latency_ms == 0.0


def test_a_slow_solution_is_judged_on_checks_worked_out_during_its_correctness_call(tmp_path):
    """A correctness call that runs past SLOW_CALL_MS fixes the first session's plan, whose picked calls' reference
    outputs the judge works out meanwhile (evaluators/ahead.py): honest slow calls pass on them, and timed calls that
    return an earlier call's outputs fail on them. Judged on the CPU, on any machine: there a session's calls are made
    one at a time (on a GPU a solution's first session asks for replays, whose picks are not known ahead)."""
    from flashinfer_bench.bench.evaluators.sessions import SLOW_CALL_MS
    from flashinfer_bench.bench.runner import persistent_runner

    pause = f"    time.sleep({SLOW_CALL_MS / 1e3 + 0.05})\n"
    slow = f"import time\ndef run(x, y):\n{pause}    return x * 2 + y\n"
    stale = ("import time\nKEPT = []\ndef run(x, y):\n" + pause
             + "    if not KEPT:\n        KEPT.append(x * 2 + y)\n    return KEPT[0].clone()\n")
    root = scale_add_set(tmp_path, {"slow": slow, "stale": stale}, sizes=(64,))
    result = Benchmark(TraceSet.from_path(root), CONFIG,
                       runner_factory=lambda c: persistent_runner(["cpu"], timeout_seconds=60)).run_all(save_results=False)
    by_name = {t.solution: t.evaluation for t in result.traces["scale_add"]}
    assert by_name["slow"].status is EvaluationStatus.PASSED, by_name["slow"].log
    assert by_name["slow"].performance.extra["timed_calls"] == [3]
    assert by_name["stale"].status is EvaluationStatus.INCORRECT_NUMERICAL
    assert "timed call" in by_name["stale"].log
