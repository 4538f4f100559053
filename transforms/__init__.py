"""Passes that rewrite IR within one level (graph optimizations, layout cleanup, ...)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_ge_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Lazy factories for ge's passes, keyed by their kebab-case names."""
    return {}
