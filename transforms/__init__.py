"""Passes that rewrite IR within one level (graph optimizations, layout cleanup, ...)."""

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str, package: str = "ge.transforms") -> Callable[[], type[ModulePass]]:
    """A factory that imports `<package>.<module>` only when the pass is used."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"{package}.{module}"), cls)

    return load


def get_all_ge_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Lazy factories for ge's passes and the registered custom passes (plugins: entry
    point group `ge.passes` or `ge.register_pass`, README "Extending ge"), by kebab-case name."""
    from ge import plugins

    return {**builtin_passes(), **{name: plugins.pass_factory(name) for name in plugins.registered_passes()}}


def builtin_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Lazy factories for ge's own passes, keyed by their kebab-case names."""
    return {
        # lowering: graph/layout -> fusion (README "Fusion")
        "fuse": _lazy("fuse", "FusePass", "ge.lowering"),
        # lowering: fusion -> tile (README "Tiling")
        "bufferize": _lazy("bufferize", "BufferizePass", "ge.lowering"),
        "tile": _lazy("tile", "TilePass", "ge.lowering"),
        "check-tile-capacity": _lazy("tile_capacity", "CheckTileCapacityPass"),
        # lowering: tile -> isa (README "ISA and simulator")
        "to-isa": _lazy("to_isa", "ToIsaPass", "ge.lowering"),
        # lowering: kernel sequence -> task (README "Building the model: memory, streams, model file")
        "build-model": _lazy("build_model", "BuildModelPass", "ge.lowering"),
        "super-kernel": _lazy("super_kernel", "SuperKernelPass"),
        # isa level: local memory plan and synchronization (README "ISA and simulator")
        "plan-local-memory": _lazy("plan_local_memory", "PlanLocalMemoryPass"),
        "insert-sync": _lazy("insert_sync", "InsertSyncPass"),
        # lowering: graph -> layout, and TransData cleanup within it (README "Targets and layouts")
        "assign-layouts": _lazy("assign_layouts", "AssignLayoutsPass", "ge.lowering"),
        "eliminate-trans-data": _lazy("trans_data_elimination", "EliminateTransDataPass"),
        # graph level: graph-optimize and its stages (README "Graph optimization")
        "constant-fold": _lazy("constant_fold", "ConstantFoldPass"),
        "simplify-graph": _lazy("simplify_graph", "SimplifyGraphPass"),
        "fold-batch-norm": _lazy("fold_batch_norm", "FoldBatchNormPass"),
        "precision-mode": _lazy("precision", "PrecisionModePass"),
        "graph-optimize": _lazy("graph_optimize", "GraphOptimizePass"),
        # graph level: QDQ patterns -> int8 Cube ops (README "INT8 quantization")
        "quant-fold": _lazy("quant_fold", "QuantFoldPass"),
        # graph level: composites -> the primitive set (README "Adding an operator")
        "decompose": _lazy("decompose", "DecomposePass"),
    }
