"""An ONNX backend (`onnx.backend.base.Backend`), usable like `onnxruntime.backend`.

    rep = ge.backend.prepare(model, device="CPU")
    outputs = rep.run([x])            # or rep.run({"input": x})
    rep = ge.backend.prepare(model, device="NPU", kernel_level="tile")

device="CPU" (the default) runs the graph-level reference interpreter: the oracle, and
what the ONNX conformance suite uses. device="NPU" compiles the model with `ge.compile`
(ge/compiler.py; keyword arguments are `ge.CompileOptions` fields, the precision mode
defaulting to must_keep_origin_dtype as ONNX semantics want) and runs it on the
executor; a model the compiler refuses (an unsupported operator, a kernel it cannot lower)
falls back to the reference interpreter with a warning. Input shapes are taken from the
arrays given to the first `run` when the model has symbolic dims (as onnxruntime does),
and the prepared module (or compiled model) is cached per input signature. With
`input_shape_range=...` (device="NPU") the model is one `ge.dynamic` dynamic-shape model:
its kernels per input shape are cached on disk too and shared across processes.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from ge.errors import GeError


class GeBackendRep(BackendRep):
    """A prepared model: imported per input signature, run on the reference interpreter.

    Graph inputs that ge needs at compile time (a Reshape target, Slice starts, Pad pads,
    reduction axes fed as inputs) are frozen: the model is specialized on their values, and
    a run with other values imports a new specialization (cached by value).
    """

    def __init__(self, model: onnx.ModelProto, input_shape: dict[str, Sequence[int]] | None = None):
        self.model = model
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self.output_names = [o.name for o in model.graph.output]
        self._input_shape = dict(input_shape or {})
        self._frozen: set[str] = set()
        self._modules: dict[tuple, object] = {}

    def _module_for(self, arrays: list[np.ndarray]):
        from ge.frontend.onnx import NeedsInputValue, import_model

        by_name = dict(zip(self.input_names, arrays))
        while True:
            frozen = {n: by_name[n] for n in self._frozen}
            key = tuple((a.shape, a.dtype.str) for a in arrays) + tuple(
                (n, frozen[n].tobytes()) for n in sorted(frozen)
            )
            if key in self._modules:
                return self._modules[key]
            shapes = {**self._input_shape, **{n: a.shape for n, a in by_name.items() if n not in frozen}}
            try:
                module = import_model(self.model, input_shape=shapes, frozen_inputs=frozen)
            except NeedsInputValue as e:
                if set(e.names) <= self._frozen:
                    raise
                self._frozen.update(e.names)
                continue
            self._modules[key] = module
            return module

    def run(self, inputs, **kwargs) -> tuple:
        from ge.runtime.reference import run

        arrays = self._bind(inputs)
        module = self._module_for(arrays)
        live = [a for n, a in zip(self.input_names, arrays) if n not in self._frozen]
        outs = run(module, live)
        return namedtupledict("Outputs", self.output_names)(*outs)

    def _bind(self, inputs) -> list[np.ndarray]:
        if isinstance(inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise GeError(f"missing model inputs: {', '.join(missing)} (the model takes {', '.join(self.input_names)})")
            return [np.asarray(inputs[n]) for n in self.input_names]
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        arrays = [np.asarray(a) for a in inputs]
        if len(arrays) != len(self.input_names):
            raise GeError(f"the model takes {len(self.input_names)} inputs ({', '.join(self.input_names)}), got {len(arrays)}")
        return arrays


class GeCompiledRep(GeBackendRep):
    """A prepared model on the NPU path: compiled per input signature, run by the executor;
    the reference interpreter when the compiler refuses the model (`fallbacks` says why)."""

    def __init__(self, model: onnx.ModelProto, input_shape: dict[str, Sequence[int]] | None, options: dict):
        super().__init__(model, input_shape)
        self.options = {"precision_mode": "must_keep_origin_dtype", **options}
        self._compiled: dict[tuple, object] = {}
        self.fallbacks: list[str] = []

    def run(self, inputs, **kwargs) -> tuple:
        arrays = self._bind(inputs)
        key = tuple((a.shape, a.dtype.str) for a in arrays)
        if key not in self._compiled:
            self._compiled[key] = self._compile(arrays)
        compiled = self._compiled[key]
        if compiled is None:
            return super().run(arrays, **kwargs)
        outs = compiled.run(dict(zip(self.input_names, arrays)))
        return namedtupledict("Outputs", self.output_names)(*(outs[n] for n in self.output_names))

    def _compile(self, arrays: list[np.ndarray]):
        import ge
        from ge.errors import UnsupportedModelError

        shapes = {**self._input_shape, **{n: a.shape for n, a in zip(self.input_names, arrays)}}
        try:
            if self.options.get("input_shape_range"):  # one ge.dynamic model serves every signature
                return next(iter(self._compiled.values()), None) or ge.compile(self.model, ge.CompileOptions(**self.options))
            return ge.compile(self.model, ge.CompileOptions(input_shape=shapes, **self.options))
        except (UnsupportedModelError, ge.CompileError) as e:
            self.fallbacks.append(str(e))
            warnings.warn(f"ge.backend: running on the reference interpreter, the compiler refused the model: {e}",
                          stacklevel=3)
            return None


def npu_refusal(model: onnx.ModelProto | str | bytes, **options) -> str | None:
    """None if `ge.compile` compiles the model for the NPU (isa level, must_keep_origin_dtype
    unless `options` say otherwise), else the compiler's message saying what it refuses."""
    import ge

    options = {"precision_mode": "must_keep_origin_dtype", "keep_ir_text": False, **options}
    try:
        ge.compile(model, ge.CompileOptions(**options))
    except GeError as e:
        return str(e)
    return None


def _is_dynamic(vi: onnx.ValueInfoProto) -> bool:
    dims = vi.type.tensor_type.shape.dim
    return not vi.type.tensor_type.HasField("shape") or any(not d.HasField("dim_value") for d in dims)


class GeBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs) -> bool:
        """CPU: every node is an operator ge imports. NPU: the model compiles -- the answer
        comes from running the compiler (`npu_refusal`), so it is the same as compiling's;
        `kwargs` are `ge.CompileOptions` fields."""
        if device.upper().startswith("NPU"):
            return npu_refusal(model, **kwargs) is None
        from ge.frontend.onnx import converter_for

        return all(converter_for(n) is not None for n in model.graph.node)  # custom ops too (ge.plugins)

    @classmethod
    def prepare(cls, model: onnx.ModelProto | str | bytes, device: str = "CPU", **kwargs) -> GeBackendRep:
        """A runnable model; for device="NPU", `kwargs` are `ge.CompileOptions` fields."""
        from ge.frontend.onnx import load_onnx_model

        if not cls.supports_device(device):
            raise GeError(f"device '{device}' is not supported (use 'CPU' or 'NPU')")
        options = dict(kwargs)
        input_shape = options.pop("input_shape", None)
        if device.upper().startswith("NPU"):
            return GeCompiledRep(load_onnx_model(model), input_shape, options)
        return GeBackendRep(load_onnx_model(model), input_shape)

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        raise GeError("run_node is not supported: wrap the node in a model and use run_model")

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper().startswith(("CPU", "NPU"))


prepare = GeBackend.prepare
run_model = GeBackend.run_model
run_node = GeBackend.run_node
supports_device = GeBackend.supports_device
is_compatible = GeBackend.is_compatible
