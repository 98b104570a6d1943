"""Which builder handles a solution, chosen by (language, binding).

A builder is a function ``(Solution, BuildContext) -> Runnable``. Lookup tries the exact
(language, binding) pair, then (language, ANY_BINDING); register a builder to add a language or a
binding, or to replace a built-in one.
"""

from __future__ import annotations

from collections.abc import Callable

from flashinfer_bench.compile.builders.python import build_python
from flashinfer_bench.compile.builders.torch_ext import build_torch_extension
from flashinfer_bench.compile.builders.triton import build_triton
from flashinfer_bench.compile.builders.tvm_ffi import build_tvm_ffi
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.data import BuildSpec, Language, Solution

Builder = Callable[[Solution, BuildContext], Runnable]
ANY_BINDING = "*"

_BUILDERS: dict[tuple[Language, str | None], Builder] = {}


def register_builder(language: Language, binding: str | None, builder: Builder) -> None:
    """Use ``builder`` for solutions in ``language`` with ``binding`` (None: no binding; ANY_BINDING: any)."""
    _BUILDERS[(language, binding)] = builder


def find_builder(spec: BuildSpec) -> Builder:
    """C++/CUDA solutions that name no binding are built with TVM-FFI, as upstream builds them."""
    effective = spec.effective_binding
    binding = effective.value if effective is not None else None
    for key in ((spec.language, binding), (spec.language, ANY_BINDING)):
        if key in _BUILDERS:
            return _BUILDERS[key]
    described = "no binding" if binding is None else f"binding '{binding}'"
    raise BuildError(f"no builder for language '{spec.language.value}' with {described}")


register_builder(Language.PYTHON, ANY_BINDING, build_python)
register_builder(Language.TILELANG, ANY_BINDING, build_python)
register_builder(Language.TRITON, ANY_BINDING, build_triton)
for _language in (Language.CPP, Language.CUDA):
    register_builder(_language, "torch", build_torch_extension)
    register_builder(_language, "tvm-ffi", build_tvm_ffi)
