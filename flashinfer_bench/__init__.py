"""FlashInfer-Bench: trustworthy correctness and performance verdicts for GPU kernels."""

__version__ = "0.1.0"
