"""Public testing helpers: the timing API kernel authors type (``flashinfer_bench.testing.bench_gpu_time``)."""

from flashinfer_bench.timing import bench_gpu_time, bench_gpu_time_detailed

__all__ = ["bench_gpu_time", "bench_gpu_time_detailed"]
