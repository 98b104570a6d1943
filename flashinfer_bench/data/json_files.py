"""Upstream's JSON file helpers, public in ``flashinfer_bench.data`` so that scripts written against upstream's
package run unchanged: one model per ``.json`` file (two-space indent), one per line in ``.jsonl``.

A file that does not hold what the model expects raises TraceSetError (a ValueError) naming the file, the line
for ``.jsonl``, and the field, as the trace-set loader does; a missing file raises FileNotFoundError.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from flashinfer_bench.data.errors import TraceSetError, describe_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)


def _validate(model_cls: type[ModelT], text: str, where: str) -> ModelT:
    try:
        return model_cls.model_validate_json(text)
    except ValidationError as exc:
        field, message = describe_validation_error(exc)
        raise TraceSetError(where, field, message) from None


def save_json_file(object: BaseModel, path: str | Path) -> None:  # noqa: A002 (upstream's parameter name)
    """Write ``object`` to ``path`` as indented JSON, making the folders it needs."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(object.model_dump_json(indent=2), encoding="utf-8")


def load_json_file(model_cls: type[ModelT], path: str | Path) -> ModelT:
    """The ``model_cls`` held by the JSON file ``path``."""
    return _validate(model_cls, Path(path).read_text(encoding="utf-8"), str(path))


def _write_lines(objects: Iterable[BaseModel], path: str | Path, mode: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, mode, encoding="utf-8") as handle:
        handle.writelines(obj.model_dump_json() + "\n" for obj in objects)


def save_jsonl_file(objects: Iterable[BaseModel], path: str | Path) -> None:
    """Write ``objects`` to ``path``, one JSON document per line, replacing what it held."""
    _write_lines(objects, path, "w")


def append_jsonl_file(objects: Iterable[BaseModel], path: str | Path) -> None:
    """Append ``objects`` to ``path``, one JSON document per line."""
    _write_lines(objects, path, "a")


def load_jsonl_file(model_cls: type[ModelT], path: str | Path) -> list[ModelT]:
    """One ``model_cls`` per non-empty line of ``path``."""
    with open(path, encoding="utf-8") as handle:
        return [_validate(model_cls, line, f"{path}:{number}") for number, line in enumerate(handle, 1)
                if line.strip()]
