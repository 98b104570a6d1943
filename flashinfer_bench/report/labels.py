"""Labels for names shown side by side (solutions in a definition's table, workloads on an axis): shortened by
what they have in common, never cut into sameness.

A label drops the prefix that every name shares (with the table's title too, when it shares it), shown as "…",
up to a separator so that a label starts at a word boundary: under the title ``gemm_n256_k256`` the solutions
``gemm_n256_k256_torch`` and ``gemm_n256_k256_triton`` read ``…_torch`` and ``…_triton``. Two different names
keep different labels (they differ exactly where the names do); whatever else is too long for its column is
wrapped by the renderer, never cut.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

ELLIPSIS = "\u2026"
SEPARATORS = frozenset("_-./: ")
#: The shortest shared prefix worth dropping: dropping fewer characters saves nothing a reader would notice.
MIN_ELIDED = 6


def shared_prefix(names: Sequence[str], title: str | None = None) -> str:
    """The prefix to drop from ``names``: the longest one they all share (a single name: the one it shares with
    ``title``), ending just before a separator that follows it in every name; "" when shorter than MIN_ELIDED."""
    candidates = list(names) if len(names) >= 2 else [*names, title] if names and title else []
    if not candidates:
        return ""
    prefix = os.path.commonprefix(candidates)
    for length in range(len(prefix), MIN_ELIDED - 1, -1):
        if all(len(name) > length and name[length] in SEPARATORS for name in names):
            return prefix[:length]
    return ""


def short_labels(names: Sequence[str], title: str | None = None) -> tuple[dict[str, str], str]:
    """(name -> label, the prefix dropped: "" when none). Distinct names get distinct labels."""
    prefix = shared_prefix(names, title)
    return {name: ELLIPSIS + name[len(prefix):] if prefix else name for name in names}, prefix


def prefix_note(prefix: str, title: str | None = None) -> str | None:
    """What a reader must be told about a dropped prefix: nothing when it is (the start of) the title shown above
    the names, else which text "…" stands for."""
    if not prefix or (title is not None and title.startswith(prefix)):
        return None
    return f"{ELLIPSIS} = {prefix}"
