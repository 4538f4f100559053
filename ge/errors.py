"""Errors a user can cause: each carries a one-paragraph message that names the file,
node or op and what is wrong, so the tools can print it without a traceback."""


class GeError(Exception):
    """Base of every user-facing ge error. `node` is the ONNX node's name when the error is
    about one node (the pre-check reports it per node)."""

    def __init__(self, *args, node: str | None = None):
        super().__init__(*args)
        self.node = node


class ModelFormatError(GeError):
    """The model file is not a readable model (truncated, corrupt, wrong format)."""


class UnsupportedModelError(GeError):
    """The model uses operators or features ge does not support (all of them listed)."""


class ShapeError(GeError):
    """A shape cannot be made static (a symbolic dim without an input_shape override)."""


class InputError(GeError):
    """Inputs given to a model do not match its signature (names, shapes, dtypes)."""
