"""IR definitions of every ge level (ops, types, attributes, verifiers); no passes here."""

from collections.abc import Callable

from xdsl.dialects import arith, scf
from xdsl.ir import Dialect

from ge.dialects.blobs import install_resource_handle_fix
from ge.dialects.fast_verify import install as install_fast_verify

# Process-wide patches of xDSL, made once when ge's dialects are first imported:
install_resource_handle_fix()  # the resource handles of ge's weights (dialects/blobs.py)
install_fast_verify(arith.Arith)  # xDSL's verdict, faster (dialects/fast_verify.py), for the kernels' index
install_fast_verify(scf.Scf)  # arithmetic and loops (half their ops); each ge dialect installs its own


def get_all_ge_dialects() -> dict[str, Callable[[], Dialect]]:
    """Lazy factories for ge's own dialects, keyed by dialect name."""

    def get_graph() -> Dialect:
        from ge.dialects.graph import Graph

        return Graph

    def get_layout() -> Dialect:
        from ge.dialects.layout import Layout

        return Layout

    def get_fusion() -> Dialect:
        from ge.dialects.fusion import Fusion

        return Fusion

    def get_tile() -> Dialect:
        from ge.dialects.tile import Tile

        return Tile

    def get_task() -> Dialect:
        from ge.dialects.task import Task

        return Task

    def get_isa() -> Dialect:
        from ge.dialects.isa import Isa

        return Isa

    return {"graph": get_graph, "layout": get_layout, "fusion": get_fusion, "tile": get_tile, "task": get_task,
            "isa": get_isa}
