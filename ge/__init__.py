"""ge: an open graph compiler and AI Core simulator in the spirit of Ascend GE/ATC.

Public API: `ge.load_onnx` imports an ONNX model into the graph dialect; `ge.backend` runs
ONNX models like `onnxruntime.backend`; later stages add `ge.compile` and `ge.load_model`.
"""

from ge.errors import GeError, ModelFormatError, ShapeError, UnsupportedModelError

__all__ = ["GeError", "ModelFormatError", "ShapeError", "UnsupportedModelError", "load_onnx"]


def load_onnx(model, input_shape=None):
    """Import an ONNX model (path, bytes or ModelProto) into a graph-dialect module."""
    from ge.frontend.onnx import import_model

    return import_model(model, input_shape=input_shape)
