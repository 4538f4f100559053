"""The converter tables the front ends share in form: a dict from a framework's op name
(an ONNX op type, a TensorFlow op, an ATen overload) to the function that converts it, and
the `@converts(...)` decorator that fills it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def registrar(table: dict[str, F]) -> Callable[..., Callable[[F], F]]:
    """`converts = registrar(CONVERTERS)`; then `@converts("Add", "Sub")` registers a function
    for each name."""

    def converts(*names: str) -> Callable[[F], F]:
        def register(fn: F) -> F:
            for name in names:
                table[name] = fn
            return fn

        return register

    return converts
