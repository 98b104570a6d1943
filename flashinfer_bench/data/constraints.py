"""A definition's ``constraints``: parsed into a small expression grammar and evaluated without ``eval``.

Real definitions constrain axes (``num_qo_heads % num_kv_heads == 0``) and input tensors
(``num_kv_indices == kv_indptr[-1].item()``, ``gemm2_weights.shape[1] == hidden_size``). The grammar is what
such expressions use and nothing more: names, numbers, arithmetic, comparisons, ``and``/``or``/``not``,
integer indexing, ``.shape`` and ``.item()``. Anything else (attribute climbs such as ``().__class__``,
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
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_ATTRIBUTES = frozenset({"shape"})
_METHODS = frozenset({"item"})


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
        for node in nodes:
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


def _check_node(node: ast.AST, source: str) -> None:
    allowed = (
        ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Name, ast.Load,
        ast.Constant, ast.Subscript, ast.Attribute, ast.Call, *_BINARY, *_COMPARE, *_UNARY,
    )
    if not isinstance(node, allowed):
        raise ConstraintError(f"constraint {source!r} uses {type(node).__name__}, which constraints may not use")
    if isinstance(node, ast.Constant) and (not isinstance(node.value, int | float) or isinstance(node.value, complex)):
        raise ConstraintError(f"constraint {source!r} uses the literal {node.value!r}; only numbers are allowed")
    if isinstance(node, ast.Name) and node.id.startswith("__"):
        raise ConstraintError(f"constraint {source!r} names {node.id!r}; names may not start with '__'")
    if isinstance(node, ast.Attribute) and node.attr not in _ATTRIBUTES | _METHODS:
        raise ConstraintError(f"constraint {source!r} reads attribute {node.attr!r}; only .shape and .item() are allowed")
    if isinstance(node, ast.Attribute) and node.attr in _METHODS:
        # .item is allowed only as the function of a call, which _check_call verifies from the parent node.
        return
    if isinstance(node, ast.Call):
        function = node.func
        if not (isinstance(function, ast.Attribute) and function.attr in _METHODS) or node.args or node.keywords:
            raise ConstraintError(f"constraint {source!r} makes a call; only .item() with no arguments is allowed")
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice | ast.Tuple):
        raise ConstraintError(f"constraint {source!r} slices; only a single integer index is allowed")


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

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        return _UNARY[type(node.op)](self._number(node.operand))

    def visit_Compare(self, node: ast.Compare) -> bool:
        left = self._number(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._number(comparator)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

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
