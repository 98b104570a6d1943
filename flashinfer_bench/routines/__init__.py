"""The routine benchmark: one CLI that times FlashInfer kernel routines across backends.

Entry point: :func:`flashinfer_bench.routines.cli.main`.
"""
