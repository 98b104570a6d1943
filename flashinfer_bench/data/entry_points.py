"""Which function of a definition's ``reference``, ``init`` and ``check`` source is the one to call.

Upstream's definitions name the reference's entry point ``run``. FlashInfer renders each source as its
preamble (imports), then the helper functions it depends on, then the function itself, which is therefore the
last top-level function of the source, named after the op with a suffix by kind: ``_gqa_paged_decode_reference``,
``_gqa_paged_decode_init``, ``standard_check`` or ``_bmm_mxfp8_check``. The one rule, for every kind: the entry
point is the last top-level function, and its name ends in the kind's suffix; for a reference, a top-level
``run`` wins (upstream's convention), wherever it stands.
"""

from __future__ import annotations

import ast
from typing import Literal

#: The tag FlashInfer puts on every definition it writes: ``fi_api:<dotted API name>``.
FLASHINFER_API_TAG = "fi_api:"
SourceKind = Literal["reference", "init", "check"]
SUFFIXES: dict[SourceKind, str] = {"reference": "_reference", "init": "_init", "check": "_check"}


def entry_point(kind: SourceKind, source: str) -> str:
    """The name of the function to call in ``source``; raises ValueError saying what the source lacks."""
    try:
        module = ast.parse(source)
    except SyntaxError as exc:
        raise ValueError(f"{kind} is not valid Python (line {exc.lineno}: {exc.msg})") from None
    functions = [node.name for node in module.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    if kind == "reference" and "run" in functions:
        return "run"
    suffix = SUFFIXES[kind]
    if functions and functions[-1].endswith(suffix):
        return functions[-1]
    last = f"its last is '{functions[-1]}'" if functions else "it defines none"
    if kind == "reference":
        raise ValueError(f"reference must define a top-level function run(*inputs), or end with a top-level "
                         f"function named '<op>{suffix}' as FlashInfer writes it ({last})")
    raise ValueError(f"{kind} must end with a top-level function named '<name>{suffix}' ({last})")


def reference_entry_point(source: str) -> str:
    return entry_point("reference", source)
