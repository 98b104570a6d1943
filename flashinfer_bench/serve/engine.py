"""Evaluations the way ``run`` makes them: a Benchmark over the served trace set's definitions and workloads and
the submitted solutions, through one runner kept warm for the server's life (its judges keep their baselines,
its build cache its builds).

Only ``Benchmark`` and the runner package's top-level names are used: which items a batch holds is decided by
overriding ``Benchmark.work_items``, the runner stays open across batches behind ``KeepOpen``, and each trace
comes back through the progress hook as ``run`` writes it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import flashinfer_bench
from flashinfer_bench.bench import Benchmark, BenchmarkConfig
from flashinfer_bench.bench.runner import (
    Runner,
    WorkItem,
    available_devices,
    isolated_runner,
    persistent_runner,
)
from flashinfer_bench.data import Solution, Trace, TraceSet

#: (definition, solution name, workload uuid): one evaluation of a batch.
Key = tuple[str, str, str]


def normalized_name(solution: Solution) -> str:
    """The name a submitted solution is evaluated and reported under (upstream's rule: name and content hash),
    so that two tenants' solutions of one name never meet in a batch or a trace."""
    return f"{solution.name}_{solution.content_hash()[:8]}"


class KeepOpen(Runner):
    """The warm runner, lent to one Benchmark run: closing it at the end of the run leaves it open."""

    def __init__(self, runner: Runner):
        self.runner = runner

    def run(self, groups, on_verdict) -> None:  # type: ignore[no-untyped-def] - Runner.run's signature
        self.runner.renew_secret()  # no two batches see the same inputs
        self.runner.run(groups, on_verdict)

    @property
    def parallelism(self) -> int:
        return self.runner.parallelism


class _Batch(Benchmark):
    """A Benchmark of exactly the wanted (definition, solution, workload) evaluations."""

    def __init__(self, trace_set: TraceSet, config: BenchmarkConfig, wanted: set[Key], runner: Runner,
                 on_trace: Callable[[Trace], None]):
        super().__init__(trace_set, config, runner_factory=lambda _: KeepOpen(runner), progress=_Relay(on_trace))
        self.wanted = wanted

    def work_items(self, *, resume: bool = False) -> list[WorkItem]:
        return [item for item in super().work_items(resume=resume)
                if (item.definition.name, item.solution.name, item.workload.uuid) in self.wanted]


@dataclass(frozen=True)
class _Relay:
    on_trace: Callable[[Trace], None]

    def start(self, total: int) -> None:
        pass

    def advance(self, trace: Trace) -> None:
        self.on_trace(trace)

    def finish(self) -> None:
        pass


class Engine:
    """The served trace set, the run configuration, and the warm runner."""

    def __init__(self, trace_set: TraceSet, config: BenchmarkConfig):
        self.trace_set = trace_set
        # The filters of `run` select from the trace set's own solutions; here the batch decides.
        self.config = config.model_copy(update={"definitions": None, "solutions": None})
        self.workloads = {name: {t.workload.uuid: t for t in traces} for name, traces in trace_set.workloads.items()}
        self.device_kind = probe_device_kind(config)
        self._runner: Runner | None = None

    @property
    def runner(self) -> Runner:
        """Built on first use, the way Benchmark builds one for ``run``."""
        if self._runner is None:
            self._runner = start_runner(self.config)
        return self._runner

    @property
    def devices(self) -> list[str]:
        address = self.config.cluster_address()
        return [f"ray:{address}"] if address else available_devices()

    def verdict_key(self, definition: str, solution_hash: str, workload_uuid: str) -> str:
        """What a verdict depends on: the solution's content, the definition and the workload as the trace set
        now has them, the evaluation's configuration for this definition, the device kind and this package's
        version."""
        spec = self.trace_set.definitions[definition]
        workload = self.workloads[definition][workload_uuid].workload
        payload = json.dumps([spec.model_dump(mode="json"), solution_hash, workload.model_dump(mode="json"),
                              self.config.resolve(spec).model_dump(mode="json"), self.config.timeout_seconds,
                              self.config.profile_baseline, self.device_kind, flashinfer_bench.__version__])
        return hashlib.sha256(payload.encode()).hexdigest()

    def evaluate(self, solutions: Sequence[Solution], wanted: Iterable[Key], on_trace: Callable[[Trace], None]) -> None:
        """Evaluate the ``wanted`` evaluations of ``solutions`` (under their normalized names), calling
        ``on_trace`` with each trace as it exists."""
        wanted = set(wanted)
        definitions = {key[0] for key in wanted}
        by_definition: dict[str, list[Solution]] = {}
        for solution in solutions:
            by_definition.setdefault(solution.definition, []).append(solution)
        workloads = {name: [self.workloads[name][uuid] for uuid in dict.fromkeys(k[2] for k in wanted if k[0] == name)]
                     for name in definitions}
        batch_set = TraceSet(self.trace_set.root, {name: self.trace_set.definitions[name] for name in definitions},
                             by_definition, workloads)
        _Batch(batch_set, self.config, wanted, self.runner, on_trace).run_all(save_results=False)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


def start_runner(config: BenchmarkConfig) -> Runner:
    """The runner ``run`` would use for ``config``: on its Ray cluster, else on every device of this machine."""
    address = config.cluster_address()
    if address:
        from flashinfer_bench.bench.runner.ray import ray_runner

        return ray_runner(address, config)
    factory = isolated_runner if config.use_isolated_runner else persistent_runner
    return factory(available_devices(), timeout_seconds=config.timeout_seconds)


PROBE = ("import torch\n"
         "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
         "print(','.join(sorted({torch.cuda.get_device_name(i) for i in range(n)})) or 'cpu')\n")


def probe_device_kind(config: BenchmarkConfig) -> str:
    """The kind of device verdicts are made on (part of a stored verdict's key): the names of this machine's
    GPUs, asked in a child process so that this one creates no CUDA context; a Ray cluster is named by its
    address."""
    address = config.cluster_address()
    if address:
        return f"ray:{address}"
    if available_devices() == ["cpu"]:
        return "cpu"
    probe = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    return probe.stdout.strip()
