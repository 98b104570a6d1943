"""Benchmark FlashInfer kernel routines across backends (thin wrapper of flashinfer_bench.routines.cli)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from flashinfer_bench.routines.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
