"""`ge-opt` frontends for `.onnx` (binary protobuf) and `.onnxtxt` (ONNX textual syntax).

Options: `input-shape` (ATC's `--input_shape`, e.g. `-f 'onnx{input-shape="x:1,3,224,224"}'`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from ge.frontend.onnx import import_model, parse_onnx_text


def _load_dialects(ctx: Context) -> None:
    """The printer writes resource blobs only for dialects loaded in the context."""
    for name in ("builtin", "func", "graph"):
        ctx.get_optional_dialect(name)


@dataclass(frozen=True)
class OnnxFrontend(Frontend):
    name = "onnx"
    input_shape: str | None = None

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        _load_dialects(ctx)
        return import_model(input.read(), input_shape=self.input_shape, name=input_name)


@dataclass(frozen=True)
class OnnxTextFrontend(Frontend):
    name = "onnxtxt"
    input_shape: str | None = None

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        _load_dialects(ctx)
        model = parse_onnx_text(input.read().decode(errors="replace"), input_name)
        return import_model(model, input_shape=self.input_shape, name=input_name)
