"""A definition's own code, run in-process: its ``init`` as an input generator, and its reference called with
inputs by name.

FlashInfer's ``init`` (see docs/trace-format.md) takes the var axes as keyword arguments (plus ``device`` and
``seed``) and returns the keyword arguments of the API call: ``{name: value}``, or for a wrapper API
``{"plan": {...}, "run": {...}}``, whose plan-time arguments describe the problem's layout (index arrays, head
counts) and whose run-time arguments are the call's data. Those are the API's parameter names, which are the
definition's input names in most definitions but not all, so each input takes, in this order:

1. the value of its own name (run-time first, then plan-time);
2. the value of the one key that its name ends with (``indptr`` for ``kv_indptr``) or that ends with its name
   (``paged_kv_indptr`` for ``kv_indptr``), when exactly one input claims that key;
3. an element of a tuple whose key names no input (``paged_kv_cache=(k, v)``): the elements go, in order, to
   the inputs still without a value that have the element's rank, in the definition's order;
4. the value of the key that differs from its name only in case (``a`` for ``A``).

An input left without a value is absent (None): the reference is then called without it, so its own default
applies, and a required parameter with no value is reported by name. The axes are read back from the shapes of
the tensors ``init`` made (it derives some, such as ``num_pages``, itself), so a workload's axes always match its
inputs.

Everything here runs the definition's code, which is trusted as its reference is (never a solution's code).
``init`` seeds torch's global generator itself; the global state is saved and restored around it, so a draw
changes nothing outside.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import inspect
import json
import linecache
import symtable
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from flashinfer_bench.bench.reference_arguments import ReferenceArgumentError, reference_call
from flashinfer_bench.data import Definition, DType, Workload
from flashinfer_bench.data.entry_points import SourceKind, entry_point

#: Keyword arguments every FlashInfer ``init`` takes besides the axes.
INIT_KNOBS = ("device", "seed")


class DefinitionCodeError(ValueError):
    """A definition's ``init``, ``check`` or reference that cannot be run as asked; the message says why."""


def load_function(definition: Definition, kind: SourceKind, namespace: Mapping[str, Any] | None = None
                  ) -> Callable[..., Any]:
    """The entry point of the definition's ``kind`` source, executed as a module of its own (registered with
    ``linecache`` so tracebacks show its lines). ``namespace`` seeds the module's globals."""
    source = getattr(definition, kind)
    if source is None:
        raise DefinitionCodeError(f"{definition.name} has no {kind}")
    name = entry_point(kind, source)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = f"<{kind} of {definition.name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(f"fib_{kind}_{digest}")
    module.__file__ = filename
    module.__dict__.update(namespace or {})
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except Exception as exc:
        raise DefinitionCodeError(f"the {kind} of {definition.name} failed to load: {type(exc).__name__}: {exc}") \
            from exc
    return getattr(module, name)


@dataclass(frozen=True)
class InitInputs:
    """What one ``init`` call made, by definition input: ``values`` (absent inputs are left out), which of them
    are plan-time (``layout``), the axes read back from the tensors, and the init's keys no input took."""

    axes: dict[str, int]
    values: dict[str, Any]
    layout: frozenset[str] = frozenset()
    unused: dict[str, Any] = field(default_factory=dict)

    def ordered(self, definition: Definition) -> list[Any]:
        """The inputs in the definition's order, None for an absent one."""
        return [self.values.get(name) for name in definition.inputs]


def required_init_axes(definition: Definition) -> list[str]:
    """The arguments the definition's ``init`` takes without a default (its var axes, as FlashInfer writes it):
    what a workload generated from ``init`` must choose."""
    parameters = inspect.signature(load_function(definition, "init")).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):  # a dispatching init: it takes every axis
        return definition.workload_axes
    return [name for name, p in parameters.items() if name not in INIT_KNOBS and p.default is p.empty
            and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def workload_from_init(definition: Definition, axes: Mapping[str, int], *, seed: int = 0, device: str = "cpu"
                       ) -> Workload:
    """A workload for a definition that has none: ``init`` is run once with ``axes`` and the workload binds the
    axes its tensors show (it derives some itself), with every input left to ``init`` (drawn afresh, from the
    run's seeds, whenever the workload runs). The uuid is a digest of the definition's name and the axes."""
    not_axes = [name for name in required_init_axes(definition) if name not in definition.axes]
    if not_axes:
        raise DefinitionCodeError(f"the init of {definition.name} needs {not_axes}, which are not axes of the "
                                  "definition, so no workload can give them")
    made = run_init(definition, axes, seed, device)
    found = dict(made.axes)
    if any(axis not in found for axis in definition.workload_axes) and reference_problem(definition) is None:
        found.update({axis: length for axis, length in _output_axes(definition, made).items() if axis not in found})
    defaults = inspect.signature(load_function(definition, "init")).parameters
    for axis in definition.workload_axes:  # shown by no tensor made (an optional input left out): init's default
        if axis not in found and axis in defaults and isinstance(defaults[axis].default, int):
            found[axis] = defaults[axis].default
    unbound = [axis for axis in definition.workload_axes if axis not in found]
    if unbound:
        raise DefinitionCodeError(f"the init of {definition.name} made no tensor that shows axes {unbound}; give "
                                  "them in axes")
    bound = {axis: found[axis] for axis in definition.workload_axes}
    digest = hashlib.sha256(json.dumps([definition.name, bound], sort_keys=True).encode()).hexdigest()[:16]
    return Workload(axes=bound, inputs={}, uuid=f"init-{digest}")


def run_init(definition: Definition, axes: Mapping[str, int], seed: int, device: str) -> InitInputs:
    """Call the definition's ``init`` with the axes it takes (from ``axes``), ``device`` and ``seed``, and map
    what it returns onto the definition's inputs (see the module docstring)."""
    function = load_function(definition, "init")
    parameters = inspect.signature(function).parameters
    known = {**definition.const_axes, **axes}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    arguments = {name: int(value) for name, value in known.items() if takes_any or name in parameters}
    arguments.update({knob: value for knob, value in (("device", device), ("seed", seed))
                      if takes_any or knob in parameters})
    missing = [name for name, p in parameters.items() if p.default is p.empty and name not in arguments
               and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if missing:
        raise DefinitionCodeError(f"the init of {definition.name} needs {missing}, which the workload's axes do "
                                  "not give")
    with _init_context(device):
        try:
            made = function(**arguments)
        except Exception as exc:
            raise DefinitionCodeError(f"the init of {definition.name} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, dict):
        raise DefinitionCodeError(f"the init of {definition.name} returned {type(made).__name__}, not a dict")
    return _map_inputs(definition, made, known)


@contextlib.contextmanager
def _init_context(device: str) -> Iterator[None]:
    """Torch's global generator saved and restored around ``init`` (which seeds it), and memory ``init``
    allocates without writing (``torch.empty`` output buffers) filled with a known value (NaN, or the largest
    integer) instead of whatever was there: two draws from one seed must be equal, in the judge and the worker."""
    devices = [torch.device(device)] if torch.device(device).type == "cuda" else []
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    try:
        with torch.random.fork_rng(devices=devices), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.utils.deterministic.fill_uninitialized_memory = True
            yield
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _suffix_of(name: str, key: str) -> bool:
    return name.endswith("_" + key) or key.endswith("_" + name)


def _same_but_case(name: str, key: str) -> bool:
    return name != key and name.lower() == key.lower()


def _map_inputs(definition: Definition, made: dict[str, Any], known_axes: Mapping[str, int]) -> InitInputs:
    if set(made) == {"plan", "run"} and all(isinstance(part, dict) for part in made.values()):
        plan, run = made["plan"], made["run"]
    else:
        plan, run = {}, made
    keys = {**plan, **run}  # a name in both: the run-time value is the call's
    names = list(definition.inputs)
    taken: dict[str, str] = {name: name for name in names if name in keys}  # input -> init key (1. own name)
    for rule in (_suffix_of, _same_but_case):  # 2. and 4.: a key that one input, and only it, claims
        free = [key for key in keys if key not in taken.values()]
        open_names = [name for name in names if name not in taken]
        for name in open_names:
            candidates = [key for key in free if rule(name, key)]
            if len(candidates) == 1 and [other for other in open_names if rule(other, candidates[0])] == [name]:
                taken[name] = candidates[0]
    values = {name: keys[key] for name, key in taken.items()}
    free = [key for key in keys if key not in taken.values()]
    _match_by_shape(definition, values, taken, [(key, keys[key]) for key in free])
    values = {name: value for name, value in values.items() if value is not None}
    layout = frozenset(name for name, key in taken.items() if name in values and key in plan and key not in run)
    unused = {key: value for key, value in keys.items() if key not in taken.values()}
    return InitInputs(_read_axes(definition, values, known_axes), values, layout, unused)


def _match_by_shape(definition: Definition, values: dict[str, Any], taken: dict[str, str],
                    free: list[tuple[str, Any]]) -> None:
    """3. Tensors under keys no input claims (a tuple's elements one by one) go, in the init's order, to the
    inputs still without a value that they fit: same rank, the lengths of the const axes, the element type
    unless the definition leaves it open. Inputs are served in the definition's order."""
    const = definition.const_axes
    tensors = [(key, element) for key, value in free
               for element in (value if isinstance(value, tuple | list) else (value,))
               if isinstance(element, torch.Tensor)]
    for name, spec in definition.inputs.items():
        if name in values or spec.shape is None:
            continue
        wanted = None if spec.is_open else DType(spec.dtype).to_torch()
        for index, (key, tensor) in enumerate(tensors):
            if tensor.dim() == len(spec.shape) and wanted in (None, tensor.dtype) and all(
                    axis not in const or const[axis] == length
                    for axis, length in zip(spec.shape, tensor.shape, strict=True)):
                values[name], taken[name] = tensor, key
                del tensors[index]
                break


def _read_axes(definition: Definition, values: Mapping[str, Any], given: Mapping[str, int]) -> dict[str, int]:
    """Every axis a tensor's shape (or a scalar input named like an axis) shows, checked against the const
    axes and against each other; axes nothing shows keep their given length."""
    axes: dict[str, int] = {}
    seen: dict[str, str] = {}
    for name, value in values.items():
        spec = definition.inputs[name]
        if spec.shape is None:
            if name in definition.axes and isinstance(value, int) and not isinstance(value, bool):
                axes.setdefault(name, value)
            continue
        if not isinstance(value, torch.Tensor):
            continue
        if value.dim() != len(spec.shape):
            raise DefinitionCodeError(f"the init of {definition.name} made '{name}' with {value.dim()} dimensions, "
                                      f"its shape {spec.shape} has {len(spec.shape)}")
        for axis, length in zip(spec.shape, value.shape, strict=True):
            if axis in axes and axes[axis] != length:
                raise DefinitionCodeError(f"the init of {definition.name} made axis '{axis}' {axes[axis]} in "
                                          f"'{seen[axis]}' and {length} in '{name}'")
            axes[axis], seen[axis] = int(length), name
    for axis, length in definition.const_axes.items():
        if axes.setdefault(axis, length) != length:
            raise DefinitionCodeError(f"the init of {definition.name} made const axis '{axis}' {axes[axis]} (in "
                                      f"'{seen.get(axis)}'), the definition says {length}")
    for axis, length in given.items():
        axes.setdefault(axis, int(length))
    return axes


def _output_axes(definition: Definition, made: InitInputs) -> dict[str, int]:
    """Axes only the outputs show, read from the reference's outputs for the inputs ``init`` made; raises
    DefinitionCodeError when an output has another number of dimensions than its shape names."""
    try:
        outputs = call_reference(definition, made.values)
    except Exception:  # the reference's own failure is reported where it is called to judge
        return {}
    axes: dict[str, int] = {}
    for (name, spec), value in zip(definition.outputs.items(), outputs, strict=True):
        if not isinstance(value, torch.Tensor) or spec.shape is None:
            continue
        if value.dim() != len(spec.shape):
            raise DefinitionCodeError(f"the reference of {definition.name} returns '{name}' with {value.dim()} "
                                      f"dimensions {list(value.shape)}, its shape {spec.shape} has {len(spec.shape)}")
        axes.update({axis: int(length) for axis, length in zip(spec.shape, value.shape, strict=True)})
    return axes


def reference_keywords(definition: Definition, function: Callable[..., Any], values: Mapping[str, Any]
                       ) -> dict[str, Any]:
    """The reference's arguments by keyword (``reference_arguments``'s rule): absent inputs are left out so the
    reference's own defaults apply. Raises DefinitionCodeError naming a required parameter nothing gives."""
    try:
        return reference_call(definition, function).keywords(values)
    except ReferenceArgumentError as exc:
        raise DefinitionCodeError(str(exc) + (" (init does not make them)" if definition.init is not None else "")) \
            from None


def call_reference(definition: Definition, values: Mapping[str, Any]) -> tuple[Any, ...]:
    """The definition's reference called in-process with ``values`` (input name -> value) by keyword: its
    outputs in the definition's order. Raises DefinitionCodeError when it returns another number of outputs
    than the definition declares, or when the reference itself raises (named, with what it raised)."""
    from flashinfer_bench.compile import build_reference

    function = build_reference(definition)
    keywords = reference_keywords(definition, function, values)
    try:
        result = function(**keywords)
    except Exception as exc:
        raise DefinitionCodeError(f"the reference of {definition.name} failed: {type(exc).__name__}: {exc}") from exc
    outputs = tuple(result) if isinstance(result, tuple | list) else (result,)
    if len(outputs) != len(definition.outputs):
        raise DefinitionCodeError(f"the reference of {definition.name} returned {len(outputs)} outputs, the "
                                  f"definition declares {len(definition.outputs)} ({', '.join(definition.outputs)})")
    for (name, spec), value in zip(definition.outputs.items(), outputs, strict=True):
        if isinstance(value, torch.Tensor) and not spec.is_open and value.dtype != DType(spec.dtype).to_torch():
            raise DefinitionCodeError(f"the reference of {definition.name} returned '{name}' as "
                                      f"{str(value.dtype).removeprefix('torch.')}, the definition says "
                                      f"{spec.dtype.value}")
    return outputs


def undefined_names(source: str) -> list[str]:
    """Global names the functions of ``source`` read that it neither defines nor imports and that are not
    builtins: a reference FlashInfer rendered without the helpers it calls (``_rotate``, ``_rope_freqs``)
    fails on them when called, and this says so without calling it."""
    module = symtable.symtable(source, "<source>", "exec")
    defined = {symbol.get_name() for symbol in module.get_symbols() if symbol.is_assigned() or symbol.is_imported()
               or symbol.is_namespace()}
    missing: set[str] = set()
    tables = list(module.get_children())
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        missing.update(symbol.get_name() for symbol in table.get_symbols()
                       if symbol.is_global() and symbol.is_referenced() and not symbol.is_assigned())
    return sorted(name for name in missing - defined if not hasattr(builtins, name))


def reference_problem(definition: Definition) -> str | None:
    """Why the definition's reference cannot be called, found without running it; None when nothing is seen."""
    if definition.reference is None:
        return "it has no reference (FlashInfer wrote it without one)"
    missing = undefined_names(definition.reference)
    if missing:
        return f"its reference uses {missing}, which the reference source does not define"
    return None
