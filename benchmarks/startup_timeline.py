"""How long a run takes to get going: ``import torch`` and CUDA's initialisation in a bare process, then a short
``flashinfer-bench run`` over definitions of the public dataset (as ``dataset_check.py`` prepares them, at its
settings) with each line of its output stamped with the seconds since the CLI started (the line "trace set ..."
comes once the trace set is read; the first "[1/N]" line is the first verdict).

    python benchmarks/startup_timeline.py [--definitions rmsnorm_h128 gemm_n128_k2048] [--repeat 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE = ("import time; t = time.perf_counter(); import torch; a = time.perf_counter()\n"
        "if torch.cuda.is_available():\n    torch.zeros(1, device='cuda'); torch.cuda.synchronize()\n"
        "print(f'import torch {a - t:.2f} s, CUDA initialised {time.perf_counter() - a:.2f} s')")


def parse_args() -> argparse.Namespace:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dataset_check import DEFAULT_CORPUS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the dataset (definitions/, workloads/)")
    parser.add_argument("--definitions", nargs="+", default=["rmsnorm_h128", "gemm_n128_k2048"])
    parser.add_argument("--repeat", type=int, default=2, help="bare imports and CLI runs, each")
    return parser.parse_args()


def stamped(command: list[str]) -> int:
    """Run ``command``, printing each line of its output with the seconds since it started."""
    begun = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1) as run:
        assert run.stdout is not None
        for line in run.stdout:
            print(f"{time.perf_counter() - begun:7.2f} {line.rstrip()[:160]}", flush=True)
        code = run.wait()
    print(f"{time.perf_counter() - begun:7.2f} exit {code}", flush=True)
    return code


def main() -> int:
    args = parse_args()
    import dataset_check

    for _ in range(args.repeat):
        subprocess.run([sys.executable, "-c", BARE], check=True)
    with tempfile.TemporaryDirectory(prefix="startup-timeline-") as scratch:
        root = Path(scratch) / "trace-set"
        prepared = dataset_check.prepare(root, args.corpus, args.definitions, 2)
        (root / "config.yaml").write_text(dataset_check.CONFIG)
        command = [sys.executable, "-m", "flashinfer_bench.cli.main",
                   *dataset_check.run_arguments(root, list(prepared), dataset_check.parse_args([]))]
        codes = [stamped(command) for _ in range(args.repeat)]
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
