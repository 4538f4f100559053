"""ge: an open graph compiler and AI Core simulator in the spirit of Ascend GE/ATC.

Public API: `ge.load_onnx` imports an ONNX model into the graph dialect; `ge.compile`
(with `ge.CompileOptions`) compiles one into a `ge.CompiledModel` that runs on the
simulator and saves as a model file, which `ge.load_model` loads back; `ge.backend` runs
ONNX models like `onnxruntime.backend`; `ge.load_tf` imports a frozen TensorFlow GraphDef;
`ge.from_torch` imports a torch module (and
`torch.compile(model, backend="ge")` compiles with ge, see `ge.torch_backend`).
`ge.register_pass` (with the `ge.GraphPass` base) and `ge.register_op` extend ge from
outside the package (see `ge.plugins`).
"""

from ge.compiler import CompiledModel, CompileError, CompileOptions, compile, load_model
from ge.errors import GeError, InputError, ModelFormatError, ShapeError, UnsupportedModelError

__all__ = [
    "CompileError", "CompileOptions", "CompiledModel", "GeError", "GraphPass", "InputError", "ModelFormatError",
    "PluginError", "ShapeError", "UnsupportedModelError", "compile", "from_torch", "load_model", "load_onnx", "load_tf",
    "quantize", "register_op", "register_pass",
]

_PLUGIN_API = ("GraphPass", "PluginError", "register_op", "register_pass")


def __getattr__(name):
    """`ge.GraphPass`, `ge.register_pass`, ... from ge.plugins, imported on first use (it
    loads xDSL's pass machinery, which `import ge` alone does not need)."""
    if name in _PLUGIN_API:
        from ge import plugins

        return getattr(plugins, name)
    raise AttributeError(f"module 'ge' has no attribute '{name}'")


def load_onnx(model, input_shape=None):
    """Import an ONNX model (path, bytes or ModelProto) into a graph-dialect module."""
    from ge.frontend.onnx import import_model

    return import_model(model, input_shape=input_shape)


def from_torch(module, example_inputs, input_names=None, output_names=None, decompositions=None):
    """Import a torch.nn.Module (via torch.export, ATen core ops) into a graph-dialect module."""
    from ge.torch_backend import from_torch as convert

    return convert(module, example_inputs, input_names, output_names, decompositions)


def quantize(model, calibration_data, method="minmax", skip=(), **options):
    """Post-training int8 quantization (ge.quantization.quantize): a QDQ ONNX model + report."""
    from ge.quantization import quantize as run

    return run(model, calibration_data, method=method, skip=skip, **options)


def load_tf(model, input_shape=None, outputs=None):
    """Import a frozen TensorFlow GraphDef (path, bytes or GraphDef) into a graph-dialect
    module; `outputs` names the output nodes (default: the graph's sink nodes)."""
    from ge.frontend.tf import import_graphdef

    return import_graphdef(model, input_shape=input_shape, outputs=outputs)
