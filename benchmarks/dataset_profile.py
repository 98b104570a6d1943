"""Where the judge and the workers spend a dataset run, under cProfile: the public dataset (as ``dataset_check.py``
prepares it, at its settings) run through the Benchmark API with ``FLASHINFER_BENCH_PROFILE_DIR`` set, so that
the judge writes its profile as it stops and every worker after each of its timing sessions (a retired worker is
killed, so one whose items never reached a timing session writes none); then the functions with most cumulative
time, the judge's and the workers' apart.

    python benchmarks/dataset_profile.py --out /tmp/dataset-prof [--definitions rmsnorm_h128 gemm_n128_k2048]

The run's processes are started from a forkserver, which imports this script again: everything runs under
``main``.
"""

from __future__ import annotations

import argparse
import glob
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path


def parse_args() -> argparse.Namespace:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dataset_check import DEFAULT_CORPUS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the dataset (definitions/, workloads/)")
    parser.add_argument("--definitions", nargs="+", help="only these definitions (default: all with workloads)")
    parser.add_argument("--max-workloads-per-definition", type=int, default=2, metavar="N")
    parser.add_argument("--out", type=Path, required=True, help="where the profiles are written (made if missing)")
    parser.add_argument("--top", type=int, default=40, help="functions printed per process kind")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    import dataset_check

    settings = dataset_check.parse_args([])
    scratch = tempfile.TemporaryDirectory(prefix="dataset-profile-")
    root = Path(scratch.name) / "trace-set"
    prepared = dataset_check.prepare(root, args.corpus, args.definitions, args.max_workloads_per_definition)
    (root / "config.yaml").write_text(dataset_check.CONFIG)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["FLASHINFER_BENCH_PROFILE_DIR"] = str(args.out)
    from flashinfer_bench.bench.runner.server import start_worker_server

    start_worker_server()
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.data import TraceSet

    config = BenchmarkConfig.from_yaml(root / "config.yaml", warmup_runs=settings.warmup_runs,
                                       iterations=settings.iterations, num_trials=settings.num_trials,
                                       timeout_seconds=settings.timeout)
    begun = time.perf_counter()
    Benchmark(TraceSet.from_path(root), config).run_all(save_results=False)
    print(f"run: {len(prepared)} definitions in {time.perf_counter() - begun:.1f} s", flush=True)
    for kind in ("judge", "worker"):
        files = sorted(glob.glob(str(args.out / f"{kind}-*.prof")))
        print(f"===== {kind}: {len(files)} profiles")
        if files:
            pstats.Stats(*files).sort_stats("cumulative").print_stats(args.top)
    scratch.cleanup()


if __name__ == "__main__":
    main()
