"""Names in a config that a run will not meet (a definition, a solution, an op type, an ``extra`` key), each with a
did-you-mean: checked by the parent before anything runs, so that a typo is an error, not a run of nothing."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flashinfer_bench.bench.config import EXTRA_KEYS, KNOWN_OP_TYPES, BenchmarkConfig
from flashinfer_bench.bench.evaluators.registry import declared_extra_keys

if TYPE_CHECKING:
    from flashinfer_bench.data import TraceSet


def known_extra_keys() -> set[str]:
    """EXTRA_KEYS and the ``extra_keys`` of every registered evaluator."""
    return set(EXTRA_KEYS) | declared_extra_keys()


@dataclass(frozen=True)
class NameProblem:
    """A name in a config that a run will not meet: the field holding it and what is wrong, with a suggestion."""

    field: str
    message: str


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the closest known names (difflib), or "" when none is close."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def _unknown(field: str, names: Iterable[str], known: Collection[str], what: str, *, keyed: bool) -> list[NameProblem]:
    """A problem per name not in ``known``; ``keyed``: the names are keys of the field (named in the problem's
    field), else its values."""
    return [NameProblem(f"{field}.{name}" if keyed else field, f"'{name}' is not {what}{did_you_mean(name, known)}")
            for name in names if name not in known]


def name_problems(config: BenchmarkConfig, definitions: Mapping[str, str],
                  solutions: Collection[str]) -> list[NameProblem]:
    """The names in ``config`` that a run over trace sets holding ``definitions`` (name -> op type) and
    ``solutions`` (names) will not meet (the module docstring)."""
    definition = "a definition of the trace set(s)"
    problems: list[NameProblem] = []
    problems += _unknown("definitions", config.definitions or (), definitions, definition, keyed=False)
    problems += _unknown("solutions", config.solutions or (), solutions, "a solution of the trace set(s)",
                         keyed=False)
    problems += _unknown("definition_config", config.definition_config, definitions, definition, keyed=True)
    problems += _unknown("op_type_config", config.op_type_config, KNOWN_OP_TYPES | set(definitions.values()),
                         "an op type of the trace set(s) or a known one", keyed=True)
    extra_keys = known_extra_keys()
    layers = [("extra", config.extra)]
    layers += [(f"op_type_config.{name}.extra", layer.extra) for name, layer in config.op_type_config.items()]
    layers += [(f"definition_config.{name}.extra", layer.extra) for name, layer in config.definition_config.items()]
    for field, extra in layers:
        problems += _unknown(field, extra or {}, extra_keys, "an extra key that an evaluator reads", keyed=True)
    return problems


def trace_set_names(trace_sets: Sequence[TraceSet]) -> tuple[dict[str, str], set[str]]:
    """The definitions (name -> op type) and solution names that ``trace_sets`` hold together."""
    definitions = {name: d.op_type for ts in trace_sets for name, d in ts.definitions.items()}
    solutions = {s.name for ts in trace_sets for found in ts.solutions.values() for s in found}
    return definitions, solutions


class ConfigNameError(ValueError):
    """A config naming what the trace set(s) do not hold: one line per problem (``problems``), each naming the
    field, the unknown name and the closest known ones."""

    def __init__(self, problems: Sequence[NameProblem], roots: str):
        self.problems = list(problems)
        super().__init__("\n".join(f"config: field '{p.field}': {p.message} ({roots})" for p in problems))


def require_known_names(config: BenchmarkConfig, trace_sets: Sequence[TraceSet]) -> None:
    """Raise ConfigNameError when ``config`` names what ``trace_sets`` do not hold (``name_problems``)."""
    problems = name_problems(config, *trace_set_names(trace_sets))
    if problems:
        raise ConfigNameError(problems, ", ".join(str(ts.root) for ts in trace_sets))
