"""Every definition of the public FlashInfer-Trace dataset through ``flashinfer-bench run``, on this machine.

For each definition: one small synthetic workload (``tools.synthetic``) whose blobs satisfy its constraints,
its reference as a value-returning solution, which must pass against itself, and a copy whose outputs are 25%
off (integer outputs shifted by one), which must fail, both judged by the evaluator the op type resolves to.
One CLI run per op type, as a user would start it. Definitions that differ only in their name, description, tags
and the values of their constant axes (the 32 GEMMs: one reference, one layout, other N and K; the MoE pairs whose
references assign other top-k and intermediate sizes) run once, as the one of them that needs the least memory:
the others would run the same code through the same evaluator on larger random inputs, which costs minutes and
checks nothing more (``tools.synthetic``'s own test checks each one's workload). Definitions whose estimated peak
memory at the smallest workload is beyond this machine's budget are not dropped: each has its own ``slow`` test
that says how many bytes it needs, and runs where they are available.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, child_env

from flashinfer_bench.data import Definition
from flashinfer_bench.tools.memory import estimated_peak_bytes, input_bytes
from flashinfer_bench.tools.reference_solutions import (
    perturbed_solution_name,
    reference_solution_name,
    write_solutions,
)
from flashinfer_bench.tools.synthetic import synthesize
from flashinfer_bench.tools.workload_files import append_workloads, write_synthetic_workload

CORPUS = REPO.parent / "shared" / "corpus" / "flashinfer-trace"
pytestmark = [pytest.mark.slow,  # 113 definitions through the CLI (of 144 that fit): minutes
              pytest.mark.skipif(not (CORPUS / "definitions").is_dir(),
                                 reason=f"the FlashInfer-Trace dataset is not at {CORPUS}")]

#: Small settings: correctness is what is checked here; one timed call keeps the PASSED verdict honest.
RUN_FLAGS = ["--warmup-runs", "0", "--iterations", "1", "--num-trials", "1", "--timeout", "900"]
#: No reference timing; a tenth of the default sampling draws: a sampler whose tokens are shifted by one still
#: fails with them (its tokens ignore the probabilities), and a reference fails against itself with probability
#: ``sampling_significance`` whatever the draws (the evaluator's power is tested in tests/bench/evaluators).
CONFIG = """\
profile_baseline: false
op_type_config:
  moe:
    required_matched_ratio: 0.95
  sampling:
    extra:
      sampling_validation_trials: 10
      sampling_significance: 1.0e-4
"""
GIB = 1 << 30
#: At most this share of the machine's memory (GPU memory where there is a GPU) for one definition's run.
MEMORY_SHARE = 3


@cache
def memory_budget() -> tuple[int, str]:
    """(bytes one definition's run may use, where): a third of the first GPU's memory, else of the RAM."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(0).total_memory // MEMORY_SHARE, "GPU memory"
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MEMORY_SHARE, "RAM"


@cache
def dataset() -> dict[str, list[tuple[Path, Definition]]]:
    """The dataset's definitions by op type."""
    by_op: dict[str, list[tuple[Path, Definition]]] = defaultdict(list)
    for path in sorted((CORPUS / "definitions").rglob("*.json")) if CORPUS.is_dir() else ():
        definition = Definition.model_validate_json(path.read_text())
        by_op[definition.op_type].append((path, definition))
    return dict(by_op)


def peak_bytes(definition: Definition) -> int:
    return estimated_peak_bytes(definition, synthesize(definition).axes)


def fits(definition: Definition) -> bool:
    return peak_bytes(definition) <= memory_budget()[0]


def sizes_named(reference: str, definition: Definition) -> str:
    """The reference with every constant it assigns (``I = 512``) that is the value of a constant axis replaced by
    that axis's name (the first such axis), so that references written out for other sizes read the same."""
    by_value: dict[int, str] = {}
    for name, axis in definition.axes.items():
        if axis.type == "const":
            by_value.setdefault(axis.value, name)

    class Named(ast.NodeTransformer):
        def visit_Assign(self, node: ast.Assign) -> ast.Assign:
            value = node.value
            if isinstance(value, ast.Constant) and type(value.value) is int and value.value in by_value:
                node.value = ast.Name(by_value[value.value], ast.Load())
            return node

    return ast.unparse(Named().visit(ast.parse(reference)))


def same_code(definition: Definition) -> str:
    """The definition as the judge runs it, less its name, tags, descriptions (its own, its axes', its tensors')
    and its constant axes' values, in the axes and where its reference assigns them (``sizes_named``)."""

    def prose_removed(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: prose_removed(v) for k, v in value.items() if k != "description"}
        return [prose_removed(v) for v in value] if isinstance(value, list) else value

    data = prose_removed(definition.model_dump(mode="json", exclude={"name", "tags"}))
    data["axes"] = {name: {k: v for k, v in axis.items() if k != "value"} for name, axis in data["axes"].items()}
    data["reference"] = sizes_named(definition.reference, definition)
    return json.dumps(data, sort_keys=True)


def one_per_code(entries: list[tuple[Path, Definition]]) -> list[tuple[Path, Definition]]:
    """Of definitions that differ only in names and constant axis sizes (``same_code``), the one needing the
    least memory, in the order given."""
    least: dict[str, tuple[Path, Definition]] = {}
    for path, definition in entries:
        key = same_code(definition)
        if key not in least or peak_bytes(definition) < peak_bytes(least[key][1]):
            least[key] = (path, definition)
    kept = {id(entry[1]) for entry in least.values()}
    return [entry for entry in entries if id(entry[1]) in kept]


def build_trace_set(root: Path, definitions: list[tuple[Path, Definition]]) -> Path:
    for path, definition in definitions:
        target = root / "definitions" / definition.op_type / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        append_workloads(root, definition, [write_synthetic_workload(root, definition, synthesize(definition))])
        write_solutions(root, definition)
    (root / "config.yaml").write_text(CONFIG)
    return root


def run_cli(root: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(root),
               "--config", str(root / "config.yaml"), *RUN_FLAGS]
    return subprocess.run(command, capture_output=True, text=True, env=child_env(), cwd=REPO, timeout=1800)


def verdicts(root: Path) -> dict[tuple[str, str], dict]:
    """(definition, solution) -> the evaluation of its trace, from the files the run wrote."""
    found = {}
    for path in sorted((root / "traces").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            trace = json.loads(line)
            found[(trace["definition"], trace["solution"])] = trace["evaluation"]
    return found


def check_verdicts(root: Path, definitions: list[Definition]) -> list[str]:
    """One line per definition whose reference did not pass or whose perturbed copy did not fail."""
    found = verdicts(root)
    problems = []
    for definition in definitions:
        for solution, expected in ((reference_solution_name(definition), "PASSED"),
                                   (perturbed_solution_name(definition), "INCORRECT_NUMERICAL")):
            evaluation = found.get((definition.name, solution))
            if evaluation is None:
                problems.append(f"{solution}: no trace written")
            elif evaluation["status"] != expected:
                log = " ".join(evaluation.get("log", "").split())[-600:]
                problems.append(f"{solution}: {evaluation['status']}, expected {expected}: {log}")
    return problems


def run_and_check(tmp_path: Path, definitions: list[tuple[Path, Definition]]) -> None:
    root = build_trace_set(tmp_path / "trace-set", definitions)
    result = run_cli(root)
    assert result.returncode == 0, result.stderr[-3000:]
    problems = check_verdicts(root, [definition for _, definition in definitions])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("op_type", sorted(dataset()))
def test_reference_passes_and_perturbed_copy_fails(op_type, tmp_path):
    chosen = one_per_code([(path, definition) for path, definition in dataset()[op_type] if fits(definition)])
    if not chosen:
        pytest.skip(f"no {op_type} definition fits in {memory_budget()[0] / GIB:.1f} GiB")
    run_and_check(tmp_path, chosen)


def too_big() -> list[tuple[Path, Definition]]:
    return [(path, d) for entries in dataset().values() for path, d in entries if not fits(d)]


@pytest.mark.slow
@pytest.mark.parametrize("entry", too_big(), ids=lambda entry: entry[1].name)
def test_definition_beyond_the_default_budget(entry, tmp_path):
    """What the op-type test leaves out for memory: run alone on a GPU that has the memory for it (on the CPU
    these would take many minutes each), skipped elsewhere with the bytes it needs."""
    path, definition = entry
    axes = synthesize(definition).axes
    needed, inputs = estimated_peak_bytes(definition, axes), input_bytes(definition, axes)
    budget, where = memory_budget()
    if where != "GPU memory" or needed > budget * MEMORY_SHARE * 0.8:
        pytest.skip(f"{definition.name} needs about {needed / GIB:.1f} GiB at {axes} (inputs "
                    f"{inputs / GIB:.2f} GiB), over the {budget / GIB:.1f} GiB budget of one run in this "
                    f"machine's {where}; it runs on a GPU with {needed / 0.8 / GIB:.0f} GiB or more")
    run_and_check(tmp_path, [entry])


def test_only_definitions_that_differ_in_names_and_constant_sizes_run_once():
    gemms = [entry for entry in dataset()["gemm"] if fits(entry[1])]
    assert len(gemms) > 1 and [d.name for _, d in one_per_code(gemms)] == ["gemm_n128_k2048"]
    # Another reference, or another layout, is another definition to run.
    (path, gemm), other = gemms[0], gemms[1][1]
    changed = gemm.model_copy(update={"reference": gemm.reference + "\nEXTRA = 1\n"})
    assert len(one_per_code([(path, changed), (path, other)])) == 2
    # References that assign their constant axes' values (``I = 512``, ``TOP_K = 10``) read the same at other sizes
    moe = {d.name: (p, d) for p, d in dataset()["moe"] if "moe_fp8_block_scale_renorm_topk" in d.name and fits(d)}
    small, large = (moe[f"moe_fp8_block_scale_renorm_topk{k}_e128_h2048_{i}"] for k, i in ((10, "i512"), (8, "i768")))
    assert one_per_code([large, small]) == [small]
    # but not where a constant is not an axis's value
    block = large[1].model_copy(update={"reference": large[1].reference.replace("BLOCK = 128", "BLOCK = 64")})
    assert "BLOCK = 64" in block.reference and len(one_per_code([(large[0], block), small])) == 2
