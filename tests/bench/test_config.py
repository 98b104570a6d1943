import pytest
from helpers import SCALE_ADD

from flashinfer_bench.bench import BenchmarkConfig, EvalConfig
from flashinfer_bench.data import Definition, TraceSetError

DEFINITION = Definition.model_validate(dict(SCALE_ADD, name="rmsnorm_h4096", op_type="rmsnorm"))


def test_defaults_match_upstream_flashinfer_bench_tables():
    config = BenchmarkConfig()
    assert (config.use_isolated_runner, config.definitions, config.solutions, config.timeout_seconds,
            config.profile_baseline) == (False, None, None, 300, True)
    assert (config.warmup_runs, config.iterations, config.num_trials, config.rtol, config.atol) == (10, 50, 3, 1e-2, 1e-2)
    assert config.required_matched_ratio is None and config.extra == {}
    assert config.op_type_config == {} and config.definition_config == {}  # direct construction loads no YAML


def test_default_loads_bundled_yaml_with_overrides():
    config = BenchmarkConfig.default(timeout_seconds=600)
    assert config.timeout_seconds == 600
    assert config.op_type_config["moe"].required_matched_ratio == 0.95
    assert config.op_type_config["sampling"].extra == {"sampling_validation_trials": 100, "sampling_significance": 1e-4}


def test_resolution_order_and_extra_merge():
    config = BenchmarkConfig(
        iterations=50, rtol=0.5, extra={"a": 1, "b": 1},
        op_type_config={"rmsnorm": EvalConfig(rtol=0.1, iterations=7, extra={"b": 2, "c": 2})},
        definition_config={"rmsnorm_h4096": EvalConfig(rtol=0.001, extra={"c": 3})},
    )
    resolved = config.resolve(DEFINITION)
    assert resolved.rtol == 0.001  # definition wins
    assert resolved.iterations == 7  # op type over global
    assert resolved.atol == 1e-2  # global
    assert resolved.extra == {"a": 1, "b": 2, "c": 3}
    other = config.resolve(Definition.model_validate(SCALE_ADD))
    assert other.rtol == 0.5 and other.extra == {"a": 1, "b": 1}


def test_from_yaml_replaces_bundled_defaults(tmp_path):
    path = tmp_path / "my.yaml"
    path.write_text("iterations: 20\nop_type_config:\n  rmsnorm:\n    atol: 0.5\ndefinition_config:\n"
                    "  rmsnorm_h4096:\n    extra:\n      k: v\n")
    config = BenchmarkConfig.from_yaml(path, iterations=200)
    assert config.iterations == 200
    assert "moe" not in config.op_type_config
    resolved = config.resolve(DEFINITION)
    assert resolved.atol == 0.5 and resolved.extra == {"k": "v"}


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("iterations: -1\n", "iterations", "greater than or equal to 1"),
        ("warmup_runs: -3\n", "warmup_runs", "greater than or equal to 0"),
        ("op_type_config:\n  moe:\n    required_matched_ratio: 1.5\n", "op_type_config.moe.required_matched_ratio",
         "less than or equal to 1"),
        ("iteratoins: 5\n", "iteratoins", "unknown field"),
        ("rtol: .inf\n", "rtol", "finite number"),
        ("op_type_config:\n  gemm:\n    atol: .nan\n", "op_type_config.gemm.atol", "finite number"),
        ("definition_config:\n  d:\n    rtoll: 1\n", "definition_config.d.rtoll", "unknown field"),
        ("- a\n- b\n", None, "expected a mapping"),
        ("iterations: [\n", None, "invalid YAML"),
    ],
)
def test_bad_yaml_is_rejected_with_file_and_field(tmp_path, text, field, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TraceSetError) as info:
        BenchmarkConfig.from_yaml(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert message in str(info.value)


def test_bad_override_is_rejected():
    with pytest.raises(TraceSetError, match="iterations"):
        BenchmarkConfig.default(iterations=0)
