"""Solutions made from a definition's reference: the reference itself, and a copy whose outputs are wrong.

Both are value-returning Python solutions (``destination_passing_style: false``) in the public solution
format. They check the harness against the dataset: the reference as a solution must pass against itself,
and the perturbed copy must fail, with the evaluator that the op type resolves to.

Solutions receive their inputs in the definition's order. A reference whose ``run`` names its parameters in
another order (four MoE definitions of the public dataset put ``routing_bias`` second) is called by keyword.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from flashinfer_bench.data import Definition, layout

#: Floating outputs of the perturbed copy are multiplied by this.
PERTURBATION = 1.25
#: The author of both solutions (a folder name in upstream's layout).
AUTHOR = "reference"

_PERTURB = '''

def _perturbed(value):
    """Floating tensors times {factor}; integer tensors (sampled ids, selected indices) shifted by one."""
    if isinstance(value, (tuple, list)):
        return type(value)(_perturbed(v) for v in value)
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return ~value
        if value.is_floating_point():
            return (value.float() * {factor}).to(value.dtype)
        return value + 1
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value * {factor} if isinstance(value, float) else value + 1
    return value
'''


def reference_parameters(definition: Definition) -> list[str]:
    """The names of the reference ``run``'s positional parameters, in order."""
    module = ast.parse(definition.reference)
    run = next(node for node in module.body if isinstance(node, ast.FunctionDef) and node.name == "run")
    return [argument.arg for argument in (*run.args.posonlyargs, *run.args.args)]


def _call_line(definition: Definition) -> str:
    names = list(definition.inputs)
    if reference_parameters(definition) == names or not set(names) <= set(reference_parameters(definition)):
        return "_reference_run(*args)"
    keywords = ", ".join(f"{name}=args[{index}]" for index, name in enumerate(names))
    return f"_reference_run({keywords})"


def _source(definition: Definition, perturb: bool) -> str:
    call = _call_line(definition)
    result = f"_perturbed({call})" if perturb else call
    tail = _PERTURB.format(factor=PERTURBATION) if perturb else ""
    return (
        f"{definition.reference.rstrip()}\n\n\n"
        "import torch\n\n"
        "_reference_run = run\n\n\n"
        f"def run(*args):\n    return {result}\n{tail}"
    )


def _solution(definition: Definition, name: str, source: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "definition": definition.name,
        "author": AUTHOR,
        "description": description,
        "spec": {"language": "python", "target_hardware": ["cpu", "cuda"], "entry_point": "main.py::run",
                 "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": source}],
    }


def write_solutions(root: Path, definition: Definition) -> list[Path]:
    """Write both solutions where ``data.layout`` puts them."""
    paths = []
    for solution in (reference_solution(definition), perturbed_solution(definition)):
        path = layout.solution_file(root, AUTHOR, definition.op_type, definition.name, solution["name"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(solution, indent=2))
        paths.append(path)
    return paths


def reference_solution_name(definition: Definition) -> str:
    return f"{definition.name}__reference"


def perturbed_solution_name(definition: Definition) -> str:
    return f"{definition.name}__off25"


def reference_solution(definition: Definition) -> dict[str, Any]:
    """The definition's reference as a value-returning solution (public JSON format)."""
    return _solution(definition, reference_solution_name(definition), _source(definition, perturb=False),
                     "The definition's reference, as a solution: must pass against itself.")


def perturbed_solution(definition: Definition) -> dict[str, Any]:
    """The reference with floating outputs 25% off and integer outputs shifted by one: must fail."""
    return _solution(definition, perturbed_solution_name(definition), _source(definition, perturb=True),
                     f"The reference with outputs off (floating x{PERTURBATION}, integers + 1): must fail.")
