"""Tools that make trace-set data and are not part of a run: synthetic workloads and blobs for any definition,
and solutions made from a definition's reference. Tests and ``benchmarks/dataset_check.py`` use them."""
