"""IR definitions of every ge level (ops, types, attributes, verifiers); no passes here."""

from collections.abc import Callable

from xdsl.ir import Dialect

from ge.dialects.blobs import install_resource_handle_fix

install_resource_handle_fix()


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
