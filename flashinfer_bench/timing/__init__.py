"""Kernel timing: CUPTI, CUDA events, CUDA graphs, cold L2 and a host clock, behind one API.

``timing`` measures a callable and knows nothing of traces or routines. Optional packages (cupti-python,
nvidia-ml-py) are imported lazily on first use, never at import of this package.
"""

from .api import bench_gpu_time, bench_gpu_time_detailed
from .result import TimingResult
from .stats import SampleStats, summarize

__all__ = ["SampleStats", "TimingResult", "bench_gpu_time", "bench_gpu_time_detailed", "summarize"]
