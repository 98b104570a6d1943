"""A definition written back as the file it was read from.

``Definition.model_dump_json`` writes what upstream flashinfer-bench writes: the declared fields, in
declaration order, defaults included. A definition FlashInfer wrote is laid out otherwise (its own key order,
keys only where its template has them, ``optional`` and ``param`` on tensors), so writing it that way would
change every file. ``definition_text`` writes each part with the keys it was read with, in their order, with
the values the model holds, and keys no field declares with the values they were read with. FlashInfer writes
``json.dumps(definition, indent=2)`` (ASCII escapes), and the files in its repository end with a newline: that
is the format, so a FlashInfer file comes back byte for byte. A definition made in code, with no keys recorded,
is written with its declared fields.
"""

from __future__ import annotations

import json
from typing import Any

from flashinfer_bench.data.definition import Definition, _Recorded

_PARTS = {"axes", "inputs", "outputs"}


def _written(part: _Recorded, dumped: dict[str, Any]) -> dict[str, Any]:
    """One part as it was read: ``dumped`` is its ``model_dump(mode="json")``, which holds the declared values."""
    keys = part.written_keys
    if keys is None:
        return dumped
    undeclared = part.undeclared_values
    out: dict[str, Any] = {}
    for key in keys:
        if key in undeclared:
            out[key] = undeclared[key]
        elif key in dumped:
            out[key] = dumped[key]
        else:  # a declared field model_dump leaves out (FlashInfer's per-tensor additions)
            out[key] = getattr(part, key)
    return out


def definition_document(definition: Definition) -> dict[str, Any]:
    """The definition as a JSON document with the keys it was read with, in their order."""
    dumped = definition.model_dump(mode="json")
    for group in _PARTS:
        members: dict[str, _Recorded] = getattr(definition, group)
        dumped[group] = {name: _written(member, member.model_dump(mode="json")) for name, member in members.items()}
    return _written(definition, dumped)


def definition_text(definition: Definition) -> str:
    """The definition's file: FlashInfer's layout (two-space indent, ASCII escapes, a final newline)."""
    return json.dumps(definition_document(definition), indent=2) + "\n"
