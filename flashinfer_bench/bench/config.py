"""BenchmarkConfig (system fields + global eval defaults + per-op-type and per-definition overrides) and EvalConfig.

Resolution is a pure function of (BenchmarkConfig, Definition): definition config over op-type config over the
global defaults, field by field; ``extra`` dicts are merged with ``dict.update`` in the same order.

The names a config holds are checked against what a run will meet (``config_check.name_problems``): the definitions and
solutions it filters on and the definitions it configures must be in the trace sets, the op types it configures
in the trace sets or among KNOWN_OP_TYPES, and the ``extra`` keys among those the evaluators read (EXTRA_KEYS,
and the ``extra_keys`` a registered custom evaluator declares). Each unknown name is a problem with the closest
known names as a suggestion.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flashinfer_bench.data.definition import Definition
from flashinfer_bench.data.errors import TraceSetError, describe_validation_error

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
#: Finite: an infinite tolerance would pass every wrong output.
Tolerance = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Ratio = Annotated[float, Field(gt=0, le=1)]

EVAL_FIELDS = ("warmup_runs", "iterations", "num_trials", "rtol", "atol", "required_matched_ratio", "extra")

#: Every ``extra`` key the bundled evaluators read (bench/evaluators/), with its meaning; docs/evaluators.md
#: documents them. A custom evaluator declares its own in a class attribute ``extra_keys`` (a tuple of names),
#: which ``known_extra_keys`` collects from the registered evaluators.
EXTRA_KEYS: Mapping[str, str] = {
    "sampling_validation_trials": "SamplingEvaluator: the solution's draws per trial in the distribution test "
                                  "(default 100)",
    "sampling_significance": "SamplingEvaluator: the chance that a correct sampler fails the distribution test "
                             "(1e-4)",
    "sampling_tvd_threshold": "SamplingEvaluator: upstream's key; where set, the total variation distance between "
                              "the binned histograms must not exceed it either (not set by default)",
    "distribution_tvd_threshold": "DistributionEvaluator: the largest total variation distance a row of a "
                                  "distribution output may have from the reference's row (0.01)",
    "timed_check_probability": "every evaluator: the chance that a timed call's outputs are checked (0.125)",
}
#: Op types a config may tune without the trace set holding one: those of the public FlashInfer-Trace layout
#: (docs/trace-format.md) and those the bundled eval_config.yaml tunes.
KNOWN_OP_TYPES = frozenset({"gemm", "rmsnorm", "rope", "gqa_paged", "gqa_ragged", "mla_paged", "moe", "sampling",
                            "dsa_paged", "gdn", "lowbit"})


class EvalConfig(BaseModel):
    """Correctness and timing parameters. As an override layer, a field left unset (None) inherits."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    warmup_runs: NonNegativeInt | None = Field(None, description="Warm-up calls before timing")
    iterations: PositiveInt | None = Field(None, description="Timed calls per trial")
    num_trials: PositiveInt | None = Field(None, description="Independent input draws per workload")
    rtol: Tolerance | None = Field(None, description="Relative tolerance for correctness")
    atol: Tolerance | None = Field(None, description="Absolute tolerance for correctness")
    required_matched_ratio: Ratio | None = Field(
        None, description="Minimum fraction of elements within tolerance (low-bit evaluators)"
    )
    extra: dict[str, Any] | None = Field(None, description="Evaluator-specific parameters")


class ResolvedEvalConfig(BaseModel):
    """An EvalConfig with every field decided; what evaluators receive."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warmup_runs: NonNegativeInt
    iterations: PositiveInt
    num_trials: PositiveInt
    rtol: Tolerance
    atol: Tolerance
    required_matched_ratio: Ratio | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class BenchmarkConfig(BaseModel):
    """Everything that controls a benchmark run. Field names are the YAML keys and (with dashes) the CLI flags."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # System fields
    use_isolated_runner: bool = Field(False, description="Fresh subprocess per (solution, workload)")
    definitions: list[str] | None = Field(None, description="Only these definition names")
    solutions: list[str] | None = Field(None, description="Only these solution names")
    timeout_seconds: PositiveInt = Field(300, description="Per-workload timeout in seconds")
    profile_baseline: bool = Field(True, description="Time the reference implementation")
    ray_address: str | None = Field(None, min_length=1, description="Run on this Ray cluster ('auto' or HOST:PORT); "
                                    "unset: $RAY_ADDRESS if set, else this machine's devices")

    # Global eval defaults
    warmup_runs: NonNegativeInt = 10
    iterations: PositiveInt = 50
    num_trials: PositiveInt = 3
    rtol: Tolerance = 1e-2
    atol: Tolerance = 1e-2
    required_matched_ratio: Ratio | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    op_type_config: dict[str, EvalConfig] = Field(default_factory=dict)
    definition_config: dict[str, EvalConfig] = Field(default_factory=dict)

    @classmethod
    def default(cls, **overrides: Any) -> BenchmarkConfig:
        """The bundled eval_config.yaml, with ``overrides`` on top."""
        bundled = resources.files("flashinfer_bench.bench").joinpath("eval_config.yaml")
        return cls._from_mapping(yaml.safe_load(bundled.read_text()) or {}, str(bundled), overrides)

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> BenchmarkConfig:
        """A YAML file (replacing the bundled defaults), with ``overrides`` on top."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise TraceSetError(path, None, f"cannot be read: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise TraceSetError(path, None, f"invalid YAML: {' '.join(str(exc).split())}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise TraceSetError(path, None, f"expected a mapping of config keys at the top level, got {type(data).__name__}")
        return cls._from_mapping(data, str(path), overrides)

    @classmethod
    def _from_mapping(cls, data: dict[str, Any], where: str, overrides: dict[str, Any]) -> BenchmarkConfig:
        try:
            config = cls.model_validate(data)
        except ValidationError as exc:
            field, message = describe_validation_error(exc)
            raise TraceSetError(where, field, message) from None
        try:
            return config.with_overrides(**overrides)
        except ValidationError as exc:
            field, message = describe_validation_error(exc)
            raise TraceSetError("<overrides>", field, message) from None

    def with_overrides(self, **overrides: Any) -> BenchmarkConfig:
        """A validated copy with some fields replaced (values of None are ignored)."""
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return type(self).model_validate(data)

    def cluster_address(self) -> str | None:
        """The Ray cluster to run on: ``ray_address``, else ``$RAY_ADDRESS`` (as Ray's own tools read it); None
        runs on this machine's devices."""
        return self.ray_address or os.environ.get("RAY_ADDRESS")

    def resolve(self, definition: Definition) -> ResolvedEvalConfig:
        return resolve_eval_config(self, definition)


def resolve_eval_config(config: BenchmarkConfig, definition: Definition) -> ResolvedEvalConfig:
    """Definition override, then op-type override, then global default; ``extra`` merged by dict.update."""
    layers = [config.op_type_config.get(definition.op_type), config.definition_config.get(definition.name)]
    resolved: dict[str, Any] = {name: getattr(config, name) for name in EVAL_FIELDS if name != "extra"}
    extra = dict(config.extra)
    for layer in layers:
        if layer is None:
            continue
        for name in EVAL_FIELDS:
            value = getattr(layer, name)
            if value is None:
                continue
            if name == "extra":
                extra.update(value)
            else:
                resolved[name] = value
    return ResolvedEvalConfig(**resolved, extra=extra)
