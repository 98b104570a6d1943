"""Solutions written for FlashInfer's definitions are usable by ``flashinfer.trace_apply`` as it reads them.

FlashInfer is not installed here, so the reading is done as trace_apply does it (facts from
flashinfer/trace_apply and flashinfer/trace/solution.py): every ``<root>/solutions/**/*.json`` is parsed into a
solution (``name``, ``definition``, ``author``, ``spec`` with a known ``language``, non-empty
``target_hardware`` and an ``entry_point`` with exactly one ``::``, ``sources`` with relative unique paths that
include the entry file), keyed by the definition it names, one solution per definition; a definition is routed
by its ``name``. A Python solution is materialised to a folder, its entry file imported, and its function called
by keyword with the definition's input names (inputs the call does not have are left out); a value-returning
solution's outputs are taken by position.
"""

import importlib.util
import json
from pathlib import Path, PurePosixPath

import pytest
import torch
from helpers import REPO

from flashinfer_bench.bench.definition_code import call_reference, run_init
from flashinfer_bench.data import TraceSet
from flashinfer_bench.data.definition_file import definition_text
from flashinfer_bench.tools.reference_solutions import reference_solution, write_solutions

DUMPS = REPO.parent / "shared" / "corpus" / "flashinfer-dumps"
pytestmark = pytest.mark.skipif(not DUMPS.is_dir(), reason=f"the FlashInfer dumps are not at {DUMPS}")
#: Definitions whose reference runs on a CPU; gemma_rmsnorm's reference names its first input ``input``.
CHOSEN = ["rmsnorm_h4096", "gemma_rmsnorm_h4608", "merge_states_h32_d128", "single_decode_h32_kv8_d128",
          "top_k_renorm_probs_v32000"]
LANGUAGES = {"python", "triton", "cpp", "cuda", "tilelang", "cutedsl"}


def _solution_as_trace_apply_reads_it(data: dict) -> dict:
    """The checks ``Solution.from_dict`` makes; returns the fields trace_apply uses."""
    if data.get("definition") is None:
        raise ValueError("Solution dictionary requires a definition")
    spec, sources = data["spec"], data["sources"]
    assert isinstance(spec, dict) and isinstance(sources, list)
    assert spec["language"] in LANGUAGES and spec["target_hardware"]
    assert spec["entry_point"].count("::") == 1
    paths = [source["path"] for source in sources]
    assert len(set(paths)) == len(paths) and all(not PurePosixPath(p).is_absolute() and ".." not in
                                                 PurePosixPath(p).parts for p in paths)
    entry_file, entry_symbol = spec["entry_point"].split("::")
    assert entry_file in paths
    return {"name": data["name"], "definition": data["definition"], "author": data["author"],
            "dps": bool(spec.get("destination_passing_style", True)), "entry": (entry_file, entry_symbol),
            "sources": {source["path"]: source["content"] for source in sources}}


def _read_like_trace_apply(root: Path) -> tuple[dict, dict]:
    definitions = {}
    for path in sorted((root / "definitions").rglob("*.json")):
        data = json.loads(path.read_text())
        assert data["name"] not in definitions, f"Duplicate definition name: {data['name']}"
        definitions[data["name"]] = data
    solutions = {}
    for path in sorted((root / "solutions").rglob("*.json")):
        solution = _solution_as_trace_apply_reads_it(json.loads(path.read_text(encoding="utf-8")))
        if solution["definition"] in solutions:
            raise ValueError(f"duplicate solution for definition {solution['definition']!r} (in {path})")
        solutions[solution["definition"]] = solution
    return definitions, solutions


def _load_python(solution: dict, into: Path):
    folder = into / solution["name"]
    for relative, content in solution["sources"].items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(content)
    entry_file, entry_symbol = solution["entry"]
    spec = importlib.util.spec_from_file_location(f"trace_apply_solution_{solution['name']}", folder / entry_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, entry_symbol)


def test_reference_solutions_are_read_routed_and_called_as_trace_apply_does(tmp_path):
    dumps = TraceSet.from_path(DUMPS)
    root = tmp_path / "apply"
    for name in CHOSEN:
        definition = dumps.definitions[name]
        file = root / "definitions" / definition.op_type / f"{name}.json"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(definition_text(definition))
        solution = reference_solution(definition)
        path = root / "solutions" / solution["author"] / definition.op_type / name / f"{solution['name']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(solution, indent=2))

    definitions, solutions = _read_like_trace_apply(root)
    assert set(solutions) == set(CHOSEN) and set(definitions) == set(CHOSEN)
    for name in CHOSEN:
        definition = dumps.definitions[name]
        assert definitions[name] == json.loads((DUMPS / "definitions" / f"{name}.json").read_text())
        solution = solutions[name]
        assert solution["dps"] is False
        function = _load_python(solution, tmp_path / "materialised")
        made = run_init(definition, {axis: 3 for axis in definition.var_axes}, seed=5, device="cpu")
        keywords = {input_name: value for input_name, value in made.values.items() if value is not None}
        returned = function(**keywords)
        produced = list(returned) if isinstance(returned, tuple | list) else [returned]
        expected = call_reference(definition, made.values)
        assert len(produced) == len(definition.outputs)
        for got, want in zip(produced, expected, strict=True):
            assert torch.equal(got, want), name


def test_the_perturbed_copy_beside_the_reference_is_a_second_solution_trace_apply_refuses(tmp_path):
    definition = TraceSet.from_path(DUMPS).definitions["rmsnorm_h4096"]
    write_solutions(tmp_path, definition)
    with pytest.raises(ValueError, match="duplicate solution for definition 'rmsnorm_h4096'"):
        _read_like_trace_apply(tmp_path)
