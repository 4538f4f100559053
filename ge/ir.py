"""Text <-> IR for ge's modules, outside `ge-opt`: a Context with every ge dialect, and
print/parse that keep the `dense_resource` weight blobs (so a module round-trips)."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer


def make_context() -> Context:
    """A Context with builtin, func, arith, scf and every ge dialect loaded."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.scf import Scf

    from ge.dialects import get_all_ge_dialects

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(Arith)  # index arithmetic and loops of the tile level
    ctx.load_dialect(Scf)
    for factory in get_all_ge_dialects().values():
        ctx.load_dialect(factory())
    return ctx


def print_module(module: ModuleOp, generic: bool = False) -> str:
    """Print like `ge-opt`: the module, then the resource blobs it references."""
    out = io.StringIO()
    printer = Printer(stream=out, print_generic_format=generic)
    printer.print_op(module)
    printer.print_metadata(make_context().loaded_dialects)
    out.write("\n")
    return out.getvalue()


def parse_module(text: str, name: str = "<text>") -> ModuleOp:
    """Parse (and verify) a module printed by `print_module` or `ge-opt`."""
    module = Parser(make_context(), text, name).parse_module()
    module.verify()
    return module


def run_passes(module: ModuleOp, pipeline: str) -> ModuleOp:
    """Apply a `ge-opt -p` pipeline spec (e.g. "graph-optimize,fuse{debug=true}") in process."""
    from xdsl.passes import PassPipeline

    from ge.transforms import get_all_ge_passes

    PassPipeline.parse_spec(get_all_ge_passes(), pipeline).apply(make_context(), module)
    module.verify()
    return module
