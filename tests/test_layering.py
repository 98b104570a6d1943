"""The package's layering, read from its imports (an AST walk, nothing imported): the first folder of a path says
in which process a line runs, and the imports keep to it.

- the judge (``bench/judge/``, ``bench/evaluators/``) never imports the worker (``bench/worker/``), nor the other way;
- neither imports the parent (``bench/runner/``, ``bench/benchmark.py``, ``bench/config_check.py``);
- what both sides use (``bench/*.py``, ``bench/wire/``) imports neither side, nor the parent;
- nothing under ``bench/`` imports upward into ``cli/`` or ``report/``;
- no import cycle anywhere in the package (imports inside functions and under TYPE_CHECKING count too);
- no module is longer than 400 lines.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import flashinfer_bench

PACKAGE = Path(flashinfer_bench.__file__).parent
NAME = "flashinfer_bench"

JUDGE = ("bench.judge", "bench.evaluators")
WORKER = ("bench.worker",)
PARENT = ("bench.runner", "bench.benchmark", "bench.config_check")
SHARED_PACKAGES = ("bench.wire",)
FORBIDDEN = [
    (JUDGE, WORKER, "the judge imports the worker"),
    (WORKER, JUDGE, "the worker imports the judge"),
    ((*JUDGE, *WORKER), PARENT, "a judge or worker imports the parent"),
    (SHARED_PACKAGES, (*JUDGE, *WORKER, *PARENT), "a helper both sides use imports one side"),
    (("bench",), ("cli", "report"), "bench/ imports upward"),
]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def is_shared_module(module: str) -> bool:
    """``bench/<name>.py``: a helper beside the three processes' folders."""
    parts = module.split(".")
    return (len(parts) == 2 and parts[0] == "bench" and not (PACKAGE / "bench" / parts[1]).is_dir()
            and not within(module, PARENT))


def imports(root: Path) -> dict[str, set[str]]:
    """Per module of the package under ``root`` (names without the package's own), the package modules it imports."""
    modules = {module_name(path, root): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".") if package else []
                    base = base[:len(base) - node.level + 1]
                    prefix = ".".join([NAME, *base, *([node.module] if node.module else [])])
                else:
                    prefix = node.module or ""
                # ``from package import module`` imports the module; ``from module import name``, the module.
                names = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}"[len(NAME) + 1:] in modules else prefix
                         for alias in node.names]
            for name in names:
                if name == NAME or not name.startswith(NAME + "."):
                    continue
                target = name[len(NAME) + 1:]
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    targets.add(target)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(root: Path) -> list[str]:
    graph = imports(root)
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            for sources, destinations, why in FORBIDDEN:
                if within(module, sources) and within(target, destinations):
                    found.append(f"{why}: {module} -> {target}")
            if is_shared_module(module) and within(target, (*JUDGE, *WORKER, *PARENT)):
                found.append(f"a helper both sides use imports one side: {module} -> {target}")
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return found


def test_the_package_keeps_its_layers():
    assert violations(PACKAGE) == []


def copy_of_package(tmp_path: Path) -> Path:
    root = tmp_path / NAME
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__", "*.so", "assets"))
    return root


def test_a_judge_that_imports_the_worker_is_caught(tmp_path):
    root = copy_of_package(tmp_path)
    judge = root / "bench" / "judge" / "remote.py"
    judge.write_text(judge.read_text() + "\n\ndef leak():\n    from flashinfer_bench.bench.worker.main import Worker\n")
    assert violations(root) == ["the judge imports the worker: bench.judge.remote -> bench.worker.main"]


def test_a_worker_that_imports_an_evaluator_and_bench_importing_the_cli_are_caught(tmp_path):
    root = copy_of_package(tmp_path)
    worker = root / "bench" / "worker" / "torch_state.py"
    worker.write_text(worker.read_text() + "\nfrom ..evaluators import compare  # noqa\n")
    harness = root / "bench" / "harness.py"
    harness.write_text(harness.read_text() + "\nimport flashinfer_bench.cli.report  # noqa\n")
    found = violations(root)
    assert "the worker imports the judge: bench.worker.torch_state -> bench.evaluators.compare" in found
    assert "bench/ imports upward: bench.harness -> cli.report" in found


def test_a_cycle_is_caught(tmp_path):
    root = copy_of_package(tmp_path)
    clock = root / "bench" / "judge" / "clock.py"
    clock.write_text(clock.read_text() + "\n\ndef later():\n    from flashinfer_bench.bench.judge import schedule\n")
    [found] = violations(root)
    assert found.startswith("import cycle: bench.judge.clock -> ") and found.endswith(" -> bench.judge.schedule")


#: No module of the package is longer than this (small modules with one job each).
MAX_MODULE_LINES = 400


def test_no_module_is_over_the_limit():
    long = {str(path.relative_to(PACKAGE)): lines for path in PACKAGE.rglob("*.py")
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}
