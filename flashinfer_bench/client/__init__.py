"""A Python client of ``flashinfer-bench serve`` (needs httpx: the ``client`` or ``serve`` extra)."""

from flashinfer_bench.client.client import Client, ServeError, Submitted

__all__ = ["Client", "ServeError", "Submitted"]
