"""Simulated cycles of int8 vs f16 inference on an Ascend chip (issue 21; the 910 by default).

    python bench/int8_cycles.py [--models resnet50,resnet_stack] [--batch 16] [--soc ascend910] [--json out.json]
                                [--vector-epilogue] [--fold-bn] [--no-fold-bn]

Each model (a light zoo model with calibrated random weights, or `resnet_stack`: ResNet-50's
conv2_x + one conv3_x bottleneck) is compiled twice: as is under force_fp16, and
after `ge.quantize` (minmax, symmetric int8 activations, per-channel int8 weights; a zoo
model's first and last layers kept in float, ATC's default; every conv of the stack) -- its QDQ
model folds into quant_conv2d / quant_matmul on the int8 Cube with dequantize / requantize
in the epilogues. Both run once on the simulator in timing-only mode at `--batch`; the table
gives total cycles, Cube-kernel cycles and their int8 / f16 ratio, and what the int8 graph's
extra kernels cost: the kernels without Cube work (standalone quantize / dequantize, layout
changes) in each graph. On a FixPipe chip (910B / 310B) the int8 epilogues run in
FixPipe's quant mode; `--vector-epilogue` keeps them on the Vector unit
(`to-isa{fixpipe-quant=false}`) to measure what that buys. ge.quantize folds each
Conv -> BatchNormalization into the conv before quantizing (its default, AMCT's "BN fold");
`--no-fold-bn` turns that off (each BatchNorm then runs after its int8 conv's dequantize, in
float); `--fold-bn` also folds the float model the f16 run compiles (ge.quantize's
`fold_batch_norms`). Results are merged into the JSON file under
"<model>_<soc>_b<batch>[_vector_epilogue][_fold_bn][_no_fold_bn]".
"""

from __future__ import annotations

import json
import time

import numpy as np
import onnx
from _common import RESULTS, markdown, parser

import ge
from ge.quantization import fold_batch_norms
from ge.testing import calibrated_model, random_inputs


def resnet_stack(batch: int = 1, seed: int = 0) -> onnx.ModelProto:
    """ResNet-50's conv2_x and the first conv3_x bottleneck (1x1 -> 3x3 -> 1x1 + shortcut,
    ReLU), He-initialized: the convolutions that dominate resnet50, 64 x 56 x 56 in."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def conv(x: str, cin: int, cout: int, k: int, stride: int = 1, relu: bool = True) -> str:
        name = f"c{len(inits)}"
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.01).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")])
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name], name=name,
                                      pads=[k // 2] * 4, strides=[stride, stride]))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"], name=f"{name}_relu"))
        return f"{name}_r"

    def bottleneck(x: str, cin: int, mid: int, cout: int, stride: int) -> str:
        y = conv(conv(conv(x, cin, mid, 1), mid, mid, 3, stride), mid, cout, 1, relu=False)
        short = x if cin == cout and stride == 1 else conv(x, cin, cout, 1, stride, relu=False)
        out = f"add{len(nodes)}"
        nodes.append(helper.make_node("Add", [y, short], [out], name=out))
        nodes.append(helper.make_node("Relu", [out], [f"{out}_r"], name=f"{out}_relu"))
        return f"{out}_r"

    x = "x"
    for cin, mid, cout, stride in ((64, 64, 256, 1), (256, 64, 256, 1), (256, 64, 256, 1), (256, 128, 512, 2)):
        x = bottleneck(x, cin, mid, cout, stride)
    graph = helper.make_graph(nodes, "resnet_stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 64, 56, 56])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def batch_free(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its Reshape targets' leading 1 made 0 (copy the input's dim: the batch),
    so that it compiles at another batch size."""
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    targets = {n.input[1] for n in m.graph.node if n.op_type == "Reshape"}
    for i, t in enumerate(m.graph.initializer):
        if t.name in targets:
            shape = numpy_helper.to_array(t).copy()
            if shape.size and shape[0] == 1:
                shape[0] = 0
                m.graph.initializer[i].CopyFrom(numpy_helper.from_array(shape, t.name))
    return m


def cycles(model: onnx.ModelProto, batch: int, soc: str = "ascend910") -> dict:
    started = time.time()
    inputs = {k: np.repeat(v, batch, axis=0) for k, v in random_inputs(model, seed=3).items()}
    compiled = ge.compile(model, ge.CompileOptions(
        soc_version=soc, precision_mode="force_fp16", keep_ir_text=False,
        input_shape={k: v.shape for k, v in inputs.items()}))
    compiled.run(inputs, timing_only=True)
    run = compiled.last_run
    kernels = run.kernels
    cube = sum(k.cycles for k in kernels if k.work.get("fractals", 0) > 0)
    other = [k for k in kernels if not k.work.get("fractals", 0)]
    return {"cycles": float(run.total_cycles), "cube_cycles": float(cube), "kernels": len(kernels),
            "cube_kernels": len(kernels) - len(other),
            "other_cycles": float(sum(k.cycles for k in other)),
            "other": {k.kernel: round(float(k.cycles)) for k in other},
            "seconds": round(time.time() - started, 1)}


def main() -> None:
    p = parser(__doc__, "int8_cycles", ["resnet50"])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--soc", default="ascend910")
    p.add_argument("--vector-epilogue", action="store_true",
                   help="the int8 epilogues on the Vector unit even on a FixPipe chip (to-isa{fixpipe-quant=false})")
    p.add_argument("--fold-bn", action="store_true",
                   help="the f16 run on the float model with its BatchNorms folded too (ge.quantize folds them anyway)")
    p.add_argument("--no-fold-bn", action="store_true",
                   help="ge.quantize(fold_bn=False): each BatchNorm left in float after its int8 conv's dequantize")
    args = p.parse_args()
    if args.vector_epilogue:
        from ge.lowering import to_isa

        to_isa.plan_fixquants = lambda kernel, target: {}  # what to-isa{fixpipe-quant=false} does
    names = args.models.split(",") if args.models else ["resnet50"]
    rows, out = [], json.loads(args.json.read_text()) if args.json.exists() else {}
    for name in names:
        f16_model = resnet_stack() if name == "resnet_stack" else calibrated_model(name)
        if args.fold_bn:
            f16_model = fold_batch_norms(f16_model)[0]
        calib = random_inputs(f16_model, seed=1)  # one sample: the model has a fixed batch of 1
        q = ge.quantize(f16_model, calib, method="minmax", report_error=False,
                        keep_first_last=name != "resnet_stack", fold_bn=not args.no_fold_bn).model
        f16 = cycles(batch_free(f16_model), args.batch, args.soc)
        int8 = cycles(batch_free(q), args.batch, args.soc)
        key = f"{name}_{args.soc}_b{args.batch}" + ("_vector_epilogue" if args.vector_epilogue else "") + \
            ("_fold_bn" if args.fold_bn else "") + ("_no_fold_bn" if args.no_fold_bn else "")
        out[key] = r = {"soc": args.soc, "batch": args.batch, "vector_epilogue": args.vector_epilogue,
                        "fold_bn": args.fold_bn, "quantize_fold_bn": not args.no_fold_bn, "f16": f16,
                        "int8": int8, "ratio_total": f16["cycles"] / int8["cycles"],
                        "ratio_cube": f16["cube_cycles"] / int8["cube_cycles"]}
        rows.append((name, args.soc, args.batch, f"{f16['cycles']:.4g}", f"{int8['cycles']:.4g}",
                     f"{r['ratio_total']:.2f}", f"{f16['cube_cycles']:.4g}", f"{int8['cube_cycles']:.4g}",
                     f"{r['ratio_cube']:.2f}", f"{f16['kernels']} / {int8['kernels']}",
                     f"{f16['other_cycles']:.4g} / {int8['other_cycles']:.4g}"))
    print(markdown(["model", "soc", "batch", "f16 cycles", "int8 cycles", "f16/int8", "f16 cube", "int8 cube",
                    "cube f16/int8", "kernels f16 / int8", "non-Cube kernel cycles f16 / int8"], rows))
    RESULTS.mkdir(exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
