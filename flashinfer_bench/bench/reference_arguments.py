"""How a definition's reference takes the inputs: which parameter each input is passed to, by keyword.

A reference's parameters are the inputs by name in upstream's definitions, but FlashInfer's references take the
API's arguments, which differ from the definition's inputs in three ways seen in its dumps: a parameter named
otherwise (``input`` for ``hidden_states``); inputs the reference takes only through ``**kwargs``
(``bmm1_scale``) or not at all, after keyword-only parameters (the MoE references); and an API argument the
reference takes but never reads (``workspace_buffer``), which no input gives. The rule, decided once per
reference from its signature (``reference_call``):

1. a parameter named like an input takes it;
2. a reference with ``**kwargs`` takes each input no parameter names by its own name (it reads them from there);
   one without takes them, in the definition's order, into the parameters named like no input, in order;
3. a required parameter that nothing gives and that the reference's code never reads is given None;
4. an absent input (None) is left out, so the reference's own default applies; a required parameter that is
   left without a value is reported by name when the reference is called.
"""

from __future__ import annotations

import dis
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flashinfer_bench.data import Definition


class ReferenceArgumentError(ValueError):
    """The reference needs a parameter that nothing gives; the message names it."""


@dataclass(frozen=True)
class ReferenceCall:
    """The keyword arguments a reference takes, by input: ``pairs`` are (parameter, input name), ``unread`` the
    required parameters given None (nothing gives them and the reference never reads them), ``required`` the
    parameters that must have a value."""

    definition: str
    pairs: tuple[tuple[str, str], ...]
    unread: tuple[str, ...]
    required: frozenset[str]

    def keywords(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The reference's keyword arguments for ``values`` (input name -> value; None or missing: absent)."""
        keywords: dict[str, Any] = dict.fromkeys(self.unread)
        keywords.update({parameter: values[name] for parameter, name in self.pairs if values.get(name) is not None})
        missing = [name for name in self.required if name not in keywords]
        if missing:
            raise ReferenceArgumentError(f"the reference of {self.definition} needs {sorted(missing)}, which no "
                                         "input gives")
        return keywords


def reference_call(definition: Definition, function: Callable[..., Any]) -> ReferenceCall:
    """How ``function`` (the definition's reference) takes the definition's inputs (the module docstring's rule)."""
    parameters = inspect.signature(function).parameters
    named = [name for name, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    pairs = [(name, name) for name in named if name in definition.inputs]
    spare = [name for name in definition.inputs if name not in parameters]
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        pairs += [(name, name) for name in spare]
    else:
        unnamed = [name for name in named if name not in definition.inputs]
        pairs += list(zip(unnamed, spare, strict=False))
    given = {parameter for parameter, _ in pairs}
    required = [name for name in named if parameters[name].default is inspect.Parameter.empty]
    unread = tuple(name for name in required if name not in given and not _reads(function, name))
    return ReferenceCall(definition.name, tuple(pairs), unread, frozenset(required))


def _reads(function: Callable[..., Any], name: str) -> bool:
    """Whether the function's code (or a function nested in it) reads the local ``name``."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None:
        return True
    if name in code.co_cellvars:
        return True
    return any(instruction.opname.startswith("LOAD") and name in (
        instruction.argval if isinstance(instruction.argval, tuple) else (instruction.argval,))
        for instruction in dis.get_instructions(code))
