"""A definition's ``constraints``: parsed into a small expression grammar and evaluated without ``eval``.

Real definitions constrain axes (``num_qo_heads % num_kv_heads == 0``) and input tensors
(``num_kv_indices == kv_indptr[-1].item()``, ``gemm2_weights.shape[1] == hidden_size``). The grammar is what
such expressions use and nothing more: names, numbers, arithmetic, comparisons, ``and``/``or``/``not``,
integer indexing, ``.shape`` and ``.item()``; and, as FlashInfer writes them, membership in a literal list
(``head_dim in (64, 128)``), string literals compared with ``==`` / ``!=`` (``mask_type == 'causal'``),
``is None`` / ``is not None`` (an optional input left out), ``a if condition else b``, and ``max()`` /
``min()`` of one tensor. Anything else (attribute climbs such as ``().__class__``,
calls, strings, lambdas) is rejected when the definition is read, so a constraint can never run code.

A constraint is evaluated over whatever is known: axis lengths, and for each input either a real tensor or a
:class:`ShapeOnly` stand-in (an input whose values are not drawn yet). Reading the values of a stand-in makes the
result *undetermined* (``None``), never a guess.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Longest constraint source accepted, and most syntax-tree nodes: bounds the work one constraint can ask for.
MAX_SOURCE_LENGTH = 1000
MAX_NODES = 200
#: Integers beyond this many bits end the evaluation (``10 ** 10 ** 10`` would otherwise run for hours).
MAX_INT_BITS = 4096


class ConstraintError(ValueError):
    """A constraint outside the grammar, or one that cannot be evaluated on the values given."""


class _Undetermined(Exception):
    """Raised inside evaluation when a value that is not known yet is needed."""


@dataclass(frozen=True)
class ShapeOnly:
    """An input whose shape is known but whose values are not (a random input before it is drawn)."""

    shape: tuple[int, ...]


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_MEMBERSHIP: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.In: lambda item, options: item in options,
    ast.NotIn: lambda item, options: item not in options,
}
_IDENTITY = (ast.Is, ast.IsNot)
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_ATTRIBUTES = frozenset({"shape"})
_METHODS = frozenset({"item"})
#: Functions a constraint may call, each on one tensor: its largest or smallest element (FlashInfer writes
#: ``max(seq_lens_kv) <= seq_len_kv``).
_REDUCTIONS: dict[str, str] = {"max": "amax", "min": "amin"}


@dataclass(frozen=True)
class Constraint:
    """One parsed constraint: its source text, checked syntax tree and the names it reads."""

    source: str
    tree: ast.Expression
    names: frozenset[str]

    @classmethod
    def parse(cls, source: str) -> Constraint:
        """Parse and check against the grammar; raises ConstraintError saying what is not allowed."""
        if not isinstance(source, str) or not source.strip():
            raise ConstraintError("a constraint must be a non-empty expression")
        if len(source) > MAX_SOURCE_LENGTH:
            raise ConstraintError(f"constraint is {len(source)} characters long, at most {MAX_SOURCE_LENGTH} are allowed")
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as exc:
            raise ConstraintError(f"constraint {source!r} is not an expression: {exc.msg}") from None
        nodes = list(ast.walk(tree))
        if len(nodes) > MAX_NODES:
            raise ConstraintError(f"constraint {source!r} has {len(nodes)} parts, at most {MAX_NODES} are allowed")
        names: set[str] = set()
        option_lists = _option_lists(nodes, source)
        for node in nodes:
            if id(node) in option_lists:
                continue
            _check_node(node, source)
            if isinstance(node, ast.Name):
                names.add(node.id)
        return cls(source, tree, frozenset(names))

    def evaluate(self, values: Mapping[str, Any]) -> bool | None:
        """True or False, or None when it depends on tensor values that are not known yet.

        ``values`` maps names to axis lengths, tensors (anything with ``shape``, indexing and ``item()``) or
        :class:`ShapeOnly`. Raises ConstraintError for a name that is not given or an operation that fails.
        """
        try:
            result = _Evaluator(values, self.source).visit(self.tree.body)
        except _Undetermined:
            return None
        return bool(_plain(result))

    def explain(self, values: Mapping[str, Any]) -> str:
        """The value of each side of each comparison, e.g. ``num_kv_indices = 7, kv_indptr[-1].item() = 6``."""
        parts: list[str] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Compare):
                for operand in (node.left, *node.comparators):
                    if isinstance(operand, ast.Constant):
                        continue
                    try:
                        value = _plain(_Evaluator(values, self.source).visit(operand))
                    except (ConstraintError, _Undetermined):
                        continue
                    text = f"{ast.unparse(operand)} = {value}"
                    if text not in parts:
                        parts.append(text)
        return ", ".join(parts)


def _option_lists(nodes: list[ast.AST], source: str) -> set[int]:
    """The literal lists on the right of ``in`` / ``not in`` (the only place a tuple or list may stand); a
    membership test must be a comparison of its own, not part of a chain."""
    lists: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Compare) and any(isinstance(op, tuple(_MEMBERSHIP)) for op in node.ops):
            options = node.comparators[-1]
            if len(node.ops) != 1 or not isinstance(options, ast.Tuple | ast.List):
                raise ConstraintError(f"constraint {source!r}: 'in' must test one value against a literal list, "
                                      "as in 'head_dim in (64, 128)'")
            lists.add(id(options))
    return lists


def _check_node(node: ast.AST, source: str) -> None:
    allowed = (
        ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Name, ast.Load,
        ast.Constant, ast.Subscript, ast.Attribute, ast.Call, *_BINARY, *_COMPARE, *_MEMBERSHIP, *_IDENTITY,
        *_UNARY,
    )
    if not isinstance(node, allowed):
        raise ConstraintError(f"constraint {source!r} uses {type(node).__name__}, which constraints may not use")
    if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | str | None):
        raise ConstraintError(f"constraint {source!r} uses the literal {node.value!r}; only numbers, strings "
                              "and None are allowed")
    if isinstance(node, ast.Compare):
        _check_comparison(node, source)
    if isinstance(node, ast.Name) and node.id.startswith("__"):
        raise ConstraintError(f"constraint {source!r} names {node.id!r}; names may not start with '__'")
    if isinstance(node, ast.Attribute) and node.attr not in _ATTRIBUTES | _METHODS:
        raise ConstraintError(f"constraint {source!r} reads attribute {node.attr!r}; only .shape and .item() are allowed")
    if isinstance(node, ast.Attribute) and node.attr in _METHODS:
        # .item is allowed only as the function of a call, which _check_call verifies from the parent node.
        return
    if isinstance(node, ast.Call):
        function = node.func
        method = isinstance(function, ast.Attribute) and function.attr in _METHODS and not node.args
        reduction = isinstance(function, ast.Name) and function.id in _REDUCTIONS and len(node.args) == 1
        if not (method or reduction) or node.keywords:
            raise ConstraintError(f"constraint {source!r} makes a call; only .item() with no arguments, and max() "
                                  "or min() of one tensor, are allowed")
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice | ast.Tuple):
        raise ConstraintError(f"constraint {source!r} slices; only a single integer index is allowed")


def _check_comparison(node: ast.Compare, source: str) -> None:
    """``is`` / ``is not`` only as 'value is None', on its own; strings only beside ``==`` and ``!=``."""
    operands = (node.left, *node.comparators)
    none_literals = [o for o in operands if isinstance(o, ast.Constant) and o.value is None]
    if any(isinstance(op, _IDENTITY) for op in node.ops) or none_literals:
        if len(node.ops) != 1 or not isinstance(node.ops[0], _IDENTITY) or none_literals != [node.comparators[0]]:
            raise ConstraintError(f"constraint {source!r}: None may only be tested as 'value is None' or "
                                  "'value is not None'")
    for index, op in enumerate(node.ops):
        sides = (operands[index], operands[index + 1])
        texts = [side for side in sides if isinstance(side, ast.Constant) and isinstance(side.value, str)]
        names = [side for side in sides if isinstance(side, ast.Name)]
        if texts and not (isinstance(op, ast.Eq | ast.NotEq) and len(texts) == 1 and len(names) == 1):
            raise ConstraintError(f"constraint {source!r}: a string may only be compared, with '==' or '!=', to a "
                                  "named argument")


def _plain(value: Any) -> Any:
    """A 0-d tensor as its Python number; everything else unchanged."""
    if isinstance(value, int | float | bool):
        return value
    shape = getattr(value, "shape", None)
    if shape is not None and len(tuple(shape)) == 0 and not isinstance(value, ShapeOnly):
        return value.item()
    return value


def _check_size(value: Any, source: str) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ConstraintError(f"constraint {source!r} computes an integer of more than {MAX_INT_BITS} bits")
    return value


class _Evaluator(ast.NodeVisitor):
    def __init__(self, values: Mapping[str, Any], source: str):
        self.values = values
        self.source = source

    def fail(self, message: str) -> ConstraintError:
        return ConstraintError(f"constraint {self.source!r}: {message}")

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id not in self.values:
            raise self.fail(f"names '{node.id}', which is neither an axis nor an input")
        return self.values[node.id]

    def visit_BoolOp(self, node: ast.BoolOp) -> bool:
        results = (bool(_plain(self.visit(value))) for value in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)

    def _number(self, node: ast.AST) -> int | float | bool:
        value = _plain(self.visit(node))
        if not isinstance(value, int | float | bool):
            raise self.fail(f"{ast.unparse(node)} is not a number")
        return value

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        left, right = self._number(node.left), self._number(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int):
            if right < 0 or right * max(abs(left), 1).bit_length() > MAX_INT_BITS:
                raise self.fail(f"{ast.unparse(node)} is too large to compute")
        try:
            return _check_size(_BINARY[type(node.op)](left, right), self.source)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise self.fail(f"{ast.unparse(node)} failed: {exc}") from None

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        return self.visit(node.body if _plain(self.visit(node.test)) else node.orelse)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        return _UNARY[type(node.op)](self._number(node.operand))

    def visit_Compare(self, node: ast.Compare) -> bool:
        if isinstance(node.ops[0], _IDENTITY):  # the grammar check made it 'name is [not] None'
            absent = self.visit(node.left) is None
            return absent if isinstance(node.ops[0], ast.Is) else not absent
        left = self._comparable(node.left, node.ops[0])
        membership = _MEMBERSHIP.get(type(node.ops[0]))
        if membership is not None:  # the grammar check made it 'value in (literal, ...)'
            options = node.comparators[0]
            assert isinstance(options, ast.Tuple | ast.List)
            return membership(left, tuple(self._number(option) for option in options.elts))
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._comparable(comparator, op)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _comparable(self, node: ast.AST, op: ast.cmpop) -> Any:
        """A number; beside ``==`` / ``!=`` also a string (a host argument such as ``mask_type``)."""
        if isinstance(op, ast.Eq | ast.NotEq):
            value = _plain(self.visit(node))
            if isinstance(value, str):
                return value
        return self._number(node)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        target = self.visit(node.value)
        if isinstance(target, int | float | bool) or not hasattr(target, "shape"):
            raise self.fail(f"{ast.unparse(node.value)} is not a tensor, so it has no .{node.attr}")
        return tuple(int(size) for size in target.shape)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        target = self.visit(node.value)
        index = self._number(node.slice)
        if not isinstance(index, int) or isinstance(index, bool):
            raise self.fail(f"index {ast.unparse(node.slice)} is not an integer")
        if isinstance(target, ShapeOnly):
            raise _Undetermined
        if isinstance(target, int | float | bool):
            raise self.fail(f"{ast.unparse(node.value)} is a number and cannot be indexed")
        try:
            return target[index]
        except (IndexError, TypeError) as exc:
            raise self.fail(f"{ast.unparse(node)} failed: {exc}") from None

    def visit_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Name):  # max() or min() of one tensor, by the grammar check
            target = self.visit(node.args[0])
            if isinstance(target, ShapeOnly):
                raise _Undetermined
            if not hasattr(target, "shape") or len(tuple(target.shape)) == 0 or target.numel() == 0:
                raise self.fail(f"{ast.unparse(node.args[0])} is not a non-empty tensor")
            return getattr(target, _REDUCTIONS[node.func.id])().item()
        assert isinstance(node.func, ast.Attribute)  # guaranteed by the grammar check
        target = self.visit(node.func.value)
        if isinstance(target, ShapeOnly):
            raise _Undetermined
        if isinstance(target, int | float | bool):
            return target
        if isinstance(target, tuple) or len(tuple(target.shape)) != 0:
            raise self.fail(f"{ast.unparse(node.func.value)} is not a single element, so .item() does not apply")
        return target.item()

    def generic_visit(self, node: ast.AST) -> Any:  # pragma: no cover - the grammar check admits nothing else
        raise self.fail(f"{type(node).__name__} is not allowed")
