"""Solutions made from a definition's reference: the reference itself, and a copy whose outputs are wrong.

Both are value-returning Python solutions (``destination_passing_style: false``) in the public solution
format. They check the harness against the dataset: the reference as a solution must pass against itself,
and the perturbed copy must fail, with the evaluator that the op type resolves to.

The solutions take the inputs positionally in the definition's order (as this project calls them) or by name
(as ``flashinfer.trace_apply`` calls a Python solution, leaving absent inputs out). The reference is called by
keyword: a parameter named like an input takes it (four MoE definitions of the public dataset put
``routing_bias`` second), parameters named like no input take the inputs no parameter names, in order
(FlashInfer's references sometimes use the API's name, ``input`` for ``hidden_states``), and absent (None)
inputs are left out so the reference's own defaults apply. Its entry point is ``run`` or FlashInfer's
``<op>_reference`` (``data.entry_points``).
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


def _entry(definition: Definition) -> ast.FunctionDef:
    if definition.reference is None or definition.reference_entry is None:
        raise ValueError(f"the definition {definition.name} has no reference to make solutions from")
    module = ast.parse(definition.reference)
    return next(node for node in reversed(module.body)
                if isinstance(node, ast.FunctionDef) and node.name == definition.reference_entry)


def reference_parameters(definition: Definition) -> list[str]:
    """The names of the reference entry point's positional parameters, in order."""
    arguments = _entry(definition).args
    return [argument.arg for argument in (*arguments.posonlyargs, *arguments.args)]


def reference_arguments(definition: Definition) -> dict[str, str]:
    """Which input each parameter of the reference's entry point takes (parameter -> input)."""
    arguments = _entry(definition).args
    parameters = [argument.arg for argument in (*arguments.args, *arguments.kwonlyargs)]
    by_parameter = {name: name for name in parameters if name in definition.inputs}
    spare = [name for name in definition.inputs if name not in parameters]
    unnamed = [name for name in parameters if name not in definition.inputs]
    by_parameter.update(zip(unnamed, spare, strict=False))
    return by_parameter


def _source(definition: Definition, perturb: bool) -> str:
    by_parameter = reference_arguments(definition)  # first: says so when there is no reference
    call = "_reference_run(**{p: values[n] for p, n in _BY_PARAMETER.items() if values.get(n) is not None})"
    result = f"_perturbed({call})" if perturb else call
    tail = _PERTURB.format(factor=PERTURBATION) if perturb else ""
    return (
        f"{(definition.reference or '').rstrip()}\n\n\n"
        "import torch\n\n"
        f"_reference_run = {definition.reference_entry}\n"
        f"_INPUTS = {tuple(definition.inputs)!r}\n"
        f"_BY_PARAMETER = {by_parameter!r}\n\n\n"
        "def run(*args, **kwargs):\n"
        "    values = dict(zip(_INPUTS, args))\n"
        "    values.update(kwargs)\n"
        f"    return {result}\n{tail}"
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
