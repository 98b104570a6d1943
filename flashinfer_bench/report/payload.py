"""The data an HTML report draws: plain JSON-ready dicts and lists (the page's script reads nothing else)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median
from typing import Any

import flashinfer_bench
from flashinfer_bench.data.trace import timestamp_now
from flashinfer_bench.report.compare import FALSE_CALL_RATE, Comparison, DefinitionComparison, reading_order
from flashinfer_bench.report.labels import prefix_note, short_labels
from flashinfer_bench.report.metrics import fast_p_curve, win_p_curve
from flashinfer_bench.report.results import Result, environments
from flashinfer_bench.report.sources import Run
from flashinfer_bench.report.summary import Tally, summarize, summarize_authors


def _round(value: float | None) -> float | None:
    """Six significant digits: the page shows at most four, and the file stays small."""
    return None if value is None else float(f"{value:.6g}")


def _interval(interval: tuple[float, float] | None) -> list[float | None] | None:
    return None if interval is None else [_round(interval[0]), _round(interval[1])]


def _band(band: tuple[float, float] | None) -> list[float | None] | None:
    """The ratios between which a match is SAME; null for an upper end nothing bounds (JSON has no infinity)."""
    if band is None:
        return None
    return [_round(band[0]), None if math.isinf(band[1]) else _round(band[1])]


def _curve(curve: Sequence[tuple[float, float]]) -> list[list[float | None]]:
    return [[_round(p), _round(share)] for p, share in curve]


def tally_stats(tally: Tally) -> dict[str, Any]:
    return {
        "evaluations": tally.evaluated, "passed": tally.passed, "success_rate": _round(tally.success_rate),
        "mean_speedup": _round(tally.mean_speedup), "geomean_speedup": _round(tally.geomean_speedup),
        "fast_1": _round(tally.fast_p(1.0)), "fast_2": _round(tally.fast_p(2.0)), "win_rate": _round(tally.win_rate),
        "judge_set": tally.judge_set,
    }


def build_payload(run: Run, records: Sequence[Result], *, comparison: Comparison | None = None,
                  baseline_label: str | None = None) -> dict[str, Any]:
    """Everything the page shows about ``records`` (the latest evaluations of ``run``), and the comparison
    with a baseline run when given."""
    solution_summaries = summarize(run.traces, run.authors)
    author_summaries = summarize_authors(run.traces, run.authors)
    by_definition: dict[str, list[Result]] = {}
    for record in records:
        by_definition.setdefault(record.definition, []).append(record)
    definitions = []
    for name in sorted(by_definition):
        definition_comparison = comparison.definitions.get(name) if comparison is not None else None
        definitions.append(_definition(run, name, by_definition[name], solution_summaries.get(name, {}),
                                       definition_comparison))
    return {
        "title": "flashinfer-bench report",
        "source": run.label,
        "baseline": baseline_label,
        "generated": timestamp_now(),
        "tool_version": flashinfer_bench.__version__,
        "counts": {"evaluations": len(records), "passed": sum(r.latency_ms is not None for r in records),
                   "definitions": len(by_definition), "solutions": len({(r.definition, r.solution) for r in records}),
                   "authors": len(author_summaries),
                   "judge_set": sum(bool(r.spread.judge_estimated_trials) for r in records if r.latency_ms is not None)},
        "environments": [dict(env, timing_methods=dict(env["timing_methods"])) for env in environments(records)],
        "authors": [{"name": author, "stats": tally_stats(tally), "fast_p": _curve(fast_p_curve(tally)),
                     "win_p": _curve(win_p_curve(tally))} for author, tally in sorted(author_summaries.items())],
        "definitions": definitions,
        "comparison": _comparison_summary(comparison) if comparison is not None else None,
    }


def _definition(run: Run, name: str, records: list[Result], summaries: dict[str, Any],
                comparison: DefinitionComparison | None) -> dict[str, Any]:
    definition = run.definitions.get(name)
    workloads: dict[str, dict[str, int]] = {}
    for record in records:
        workloads.setdefault(record.workload, dict(record.axes))
    order = sorted(workloads, key=lambda uuid: (sorted(workloads[uuid].items()), uuid))
    index = {uuid: i for i, uuid in enumerate(order)}
    if definition is not None:
        var_axes = [axis for axis, spec in definition.axes.items() if spec.type == "var"]
    else:
        var_axes = sorted({axis for axes in workloads.values() for axis in axes})
    var_axes = [axis for axis in var_axes if all(axis in axes for axes in workloads.values())]  # plottable
    solutions: dict[str, list[Result]] = {}
    for record in records:
        solutions.setdefault(record.solution, []).append(record)
    labels, prefix = short_labels(sorted(solutions), name)
    return {
        "name": name,
        "op_type": definition.op_type if definition is not None else None,
        "var_axes": var_axes,
        "label_axes": label_axes([workloads[uuid] for uuid in order], var_axes),
        "workloads": [{"uuid": uuid, "axes": workloads[uuid]} for uuid in order],
        "reference": _reference(records, index),
        "label_note": prefix_note(prefix, name),
        "solutions": [
            {"name": solution, "label": labels[solution], "author": summaries[solution].author,
             "stats": tally_stats(summaries[solution]),
             "fast_p": _curve(fast_p_curve(summaries[solution])),
             "points": [_point(record, index) for record in solutions[solution]]}
            for solution in sorted(solutions)
        ],
        "comparison": _definition_comparison(comparison, index) if comparison is not None else None,
    }


def _point(record: Result, index: dict[str, int]) -> dict[str, Any]:
    return {"w": index[record.workload], "status": record.status, "ms": _round(record.latency_ms),
            "ci": _interval(record.latency_ci), "sp": _round(record.speedup), "sp_ci": _interval(record.speedup_ci),
            "noise": _round(record.measured_noise), "method": record.spread.timing_method, "log": record.log_excerpt,
            "judge": record.latency_ms is not None and record.spread.judge_estimated_trials > 0}


def label_axes(workloads: Sequence[dict[str, int]], axes: Sequence[str]) -> list[str]:
    """The fewest of ``axes`` whose values tell the workloads apart, chosen greedily (the axis that separates the
    most first): what a workload is labelled with on a plot's x axis. A var axis that follows from another one
    (len_indptr = batch_size + 1) is never needed. When no choice tells every workload apart, the choice that
    tells the most apart; with a single workload, the first axis."""
    chosen: list[str] = []

    def distinct(choice: list[str]) -> int:
        return len({tuple(w.get(a) for a in choice) for w in workloads})

    while len(chosen) < len(axes) and distinct(chosen) < len(workloads):
        best = max((a for a in axes if a not in chosen), key=lambda a: distinct([*chosen, a]))
        if distinct([*chosen, best]) == distinct(chosen):
            break
        chosen.append(best)
    return chosen or list(axes[:1])


def _reference(records: list[Result], index: dict[str, int]) -> list[dict[str, Any]]:
    """Per workload, the median of the reference latencies its evaluations recorded (each solution's judge timed
    the reference), with an interval where one was recorded."""
    by_workload: dict[str, list[Result]] = {}
    for record in records:
        if record.reference_ms is not None:
            by_workload.setdefault(record.workload, []).append(record)
    points = []
    for workload, timed in by_workload.items():
        interval = next((r.reference_ci for r in timed if r.reference_ci is not None), None)
        points.append({"w": index[workload], "ms": _round(median(r.reference_ms for r in timed if r.reference_ms)),
                       "ci": _interval(interval)})
    return sorted(points, key=lambda point: point["w"])


def _definition_comparison(comparison: DefinitionComparison, index: dict[str, int]) -> dict[str, Any]:
    return {
        "geomean_ratio": _round(comparison.geomean_ratio),
        "verdicts": dict(comparison.verdicts),
        "status_changes": len(comparison.status_changes),
        "matches": [{"solution": m.base.solution, "w": index[m.base.workload], "base_ms": _round(m.base.latency_ms),
                     "cand_ms": _round(m.candidate.latency_ms), "ratio": _round(m.ratio),
                     "band": _band(m.band), "verdict": m.verdict, "assumed": m.assumed_noise,
                     "judge_bounded": m.judge_bounded,
                     "base_status": m.base.status, "cand_status": m.candidate.status}
                    for m in reading_order(comparison.matches)],
    }


def _comparison_summary(comparison: Comparison) -> dict[str, Any]:
    return {"min_change": comparison.min_change, "default_noise": comparison.default_noise, "drift": comparison.drift,
            "z": _round(comparison.z), "false_call_rate": FALSE_CALL_RATE,
            "matched": len(comparison.matches), "only_base": len(comparison.only_base),
            "only_candidate": len(comparison.only_candidate), "assumed": comparison.assumed_noise,
            "judge_bounded": comparison.judge_bounded}
