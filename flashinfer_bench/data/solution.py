"""Solution: an implementation of a definition, with its sources and how to build and call it."""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from flashinfer_bench.data.definition import NonEmptyStr, _Model
from flashinfer_bench.data.names import Name, check_relative_path


class Language(str, Enum):
    PYTHON = "python"
    TRITON = "triton"
    CPP = "cpp"
    CUDA = "cuda"
    TILELANG = "tilelang"
    CUTEDSL = "cutedsl"


class Binding(str, Enum):
    """How a C++/CUDA solution is bound to Python; none given means TVM-FFI, as upstream."""

    TVM_FFI = "tvm-ffi"
    TORCH = "torch"


class BuildSpec(_Model):
    """How to build a solution and call it."""

    language: Language
    target_hardware: Annotated[list[str], Field(min_length=1)]
    entry_point: NonEmptyStr
    dependencies: list[NonEmptyStr] = Field(default_factory=list)
    destination_passing_style: bool = True
    binding: Binding | None = None

    @field_validator("entry_point")
    @classmethod
    def _one_separator(cls, value: str) -> str:
        # Upstream asks for exactly one '::' and nothing more: 'main.py::' loads, and fails to build.
        if value.count("::") != 1:
            raise ValueError(f"entry_point must be '<file path>::<function name>', got {value!r}")
        return value

    @property
    def effective_binding(self) -> Binding | None:
        """The binding a C++/CUDA solution is built with (TVM-FFI when none is given); None for other languages."""
        if self.language not in (Language.CPP, Language.CUDA):
            return None
        return self.binding or Binding.TVM_FFI


class SourceFile(_Model):
    path: NonEmptyStr
    content: NonEmptyStr

    @field_validator("path")
    @classmethod
    def _relative_inside(cls, value: str) -> str:
        try:
            return check_relative_path(value)
        except ValueError as exc:
            raise ValueError(f"source path must be relative, normalised and stay inside the solution: {exc}") from None


class Solution(_Model):
    name: Name
    definition: Name
    author: Name
    spec: BuildSpec
    sources: Annotated[list[SourceFile], Field(min_length=1)]
    description: str | None = None

    @model_validator(mode="after")
    def _entry_file_present(self) -> Solution:
        paths = [s.path for s in self.sources]
        if len(set(paths)) != len(paths):
            raise ValueError(f"sources has duplicate paths: {sorted(p for p in set(paths) if paths.count(p) > 1)}")
        if self.entry_file not in paths:
            raise ValueError(f"spec.entry_point names file '{self.entry_file}', which is not among sources {paths}")
        return self

    @property
    def entry_file(self) -> str:
        return self.spec.entry_point.split("::")[0]

    @property
    def entry_function(self) -> str:
        return self.spec.entry_point.split("::")[1]

    def content_hash(self) -> str:
        """Hash of everything that affects the build, for the content-addressed build cache."""
        payload = json.dumps(
            {"spec": self.spec.model_dump(mode="json"), "sources": [s.model_dump(mode="json") for s in self.sources]},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()
