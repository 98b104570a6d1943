"""The Ray runner: evaluations spread over an existing Ray cluster (docs/scaling.md).

Ray is an optional extra (``pip install 'flashinfer-bench[ray]'``); importing this package does not import it.
"""

from flashinfer_bench._lazy import lazy_exports

_EXPORTS = {
    "RayClusterError": "flashinfer_bench.bench.runner.ray.cluster",
    "RayRunner": "flashinfer_bench.bench.runner.ray.runner",
    "ray_runner": "flashinfer_bench.bench.runner.ray.runner",
}

__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
