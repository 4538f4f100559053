"""Calibration: microbenchmarks simulated next to the published figure they should approach.

    python bench/calibration.py [--target ascend910] [--json bench/results/calibration.json]

Each row runs one small kernel on the AI Core simulator (hand-built `isa` kernels for the
single-instruction figures, `ge.compile` of a one-node ONNX model for the rest) and puts
the simulated figure next to the published one, with its source (keys into
../shared/reference/ascend.md and the target file). A simulated figure can only approach
a peak from below (a rate) or from above (cycles): `sim / published` near 1 is a
calibrated row; far from 1 says where the model (or ge's code) loses time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from _common import RESULTS, markdown
from onnx import TensorProto, helper
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, f16, f32, i1, i64

import ge
from ge import targets
from ge.dialects import isa
from ge.dialects.isa import MemSpace as S
from ge.ir import run_passes
from ge.lowering.isa_builder import IsaBuilder
from ge.runtime.simulator import Simulator, find_kernel


def _run_isa(kernel: isa.KernelOp, target: targets.Target, buffers: list[np.ndarray]):
    module = ModuleOp([kernel])
    module.attributes["ge.target"] = StringAttr(target.name)
    module = run_passes(module, "plan-local-memory,insert-sync")
    sim = Simulator(target)
    stats = sim.run_kernel(find_kernel(module), buffers)
    if sim.report.problems:
        raise SystemExit(f"simulator problems: {sim.report.problems[:3]}")
    return stats


def gm_to_ub(target: targets.Target, nbytes: int, blocks: int) -> dict:
    """`blocks` cores each copy `nbytes` GM -> UB, in 64 KB instructions (the rate over the
    cores' time, without the launch overhead)."""
    chunk = min(nbytes, 1 << 16)
    n = nbytes // 2
    t = isa.buffer_type([n * blocks], f16, S.GM)
    b = IsaBuilder.new_kernel("copy", [t], [isa.buffer_type([16], f16, S.GM)], blocks, ["x", "y"])
    x, _ = b.args
    ub = b.buffer(S.UB, [chunk // 2], f16, 1, "xu")[0]
    base = b.mul(b.block_idx(), n, "base") if blocks > 1 else None
    for i in range(nbytes // chunk):
        off = b.value(b.add_(base, i * chunk // 2)) if base is not None else b.value(b.const(i * chunk // 2))
        b.add(isa.CopyGmToUbOp(x, ub, [chunk // 2], src_offset=off))
    stats = _run_isa(b.kernel, target, [np.ones(n * blocks, np.float16), np.zeros(16, np.float16)])
    cores = max(stats.core_cycles)  # the copies alone, without the launch overhead
    return {"cycles": cores, "gb_s": nbytes * blocks / (cores / target.clock_hz) / 1e9}


def mmad_chain(target: targets.Target, count: int) -> float:
    """M-pipe busy cycles of `count` 16x16x16 f16 mmads accumulating into one L0C fractal."""
    ta = isa.buffer_type([256], f16, S.GM)
    b = IsaBuilder.new_kernel("mmad", [ta], [isa.buffer_type([256], f16, S.GM)], 1, ["a", "c"])
    a, c = b.args
    a1 = b.buffer(S.L1, [256], f16, 1, "a1")[0]
    a0, b0 = b.buffer(S.L0A, [256], f16, 1, "a0")[0], b.buffer(S.L0B, [256], f16, 1, "b0")[0]
    acc = b.buffer(S.L0C, [256], f32, 1, "acc")[0]
    b.add(isa.CopyGmToL1Op(a, a1, [256]))
    b.add(isa.CopyL1ToL0aOp(a1, a0, [256]))
    b.add(isa.CopyL1ToL0bOp(a1, b0, [256]))
    first, nofirst = b.const(1, i1), b.const(0, i1)
    for i in range(count):
        b.add(isa.MmadOp(acc, a0, b0, 16, 16, 16, init=first if i == 0 else nofirst))
    b.add(isa.FixpipeOp(acc, c, [256]))
    stats = _run_isa(b.kernel, target, [np.ones(256, np.float16), np.zeros(256, np.float16)])
    return stats.pipe_busy["M"]


def vector_op(target: targets.Target, cls, elem, repeats: int) -> float:
    """V-pipe busy cycles of one vector instruction of `repeats` 256-B repeats."""
    n = repeats * 256 // isa.itemsize(elem)
    t = isa.buffer_type([n], elem, S.GM)
    b = IsaBuilder.new_kernel("vec", [t], [t], 1, ["x", "y"])
    x, y = b.args
    xu, yu = b.buffer(S.UB, [n], elem, 1, "xu")[0], b.buffer(S.UB, [n], elem, 1, "yu")[0]
    b.add(isa.CopyGmToUbOp(x, xu, [n]))
    srcs = [xu, xu] if cls in (isa.VAddOp, isa.VDivOp) else [xu]
    ops = []
    for o in (yu, *srcs):
        ops += [o, []]
    b.add(cls.build(operands=ops, properties={"repeat": IntegerAttr(repeats, i64)}))
    b.add(isa.CopyUbToGmOp(yu, y, [n]))
    dtype = np.float16 if elem == f16 else np.float32
    before = _run_isa(b.kernel, target, [np.ones(n, dtype), np.zeros(n, dtype)])
    return before.pipe_busy["V"]


def onnx_model(node: onnx.NodeProto, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph([node], "calibration", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run_onnx(model: onnx.ModelProto, target: targets.Target, precision: str) -> dict:
    compiled = ge.compile(model, ge.CompileOptions(soc_version=target.name, precision_mode=precision,
                                                   keep_ir_text=False))
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    compiled.run(feeds)
    run = compiled.last_run
    if run.problems:
        raise SystemExit(f"simulator problems: {run.problems[:3]}")
    k = max(run.kernels, key=lambda k: k.cycles)
    return {"cycles": k.cycles, "cores": k.cores, "cube_busy": k.pipe_busy.get("M", 0.0), "bound": k.bound}


def cast(target: targets.Target, nbytes: int) -> dict:
    n = nbytes // 4
    model = onnx_model(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT16),
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n // 1024, 1024])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [n // 1024, 1024])])
    r = run_onnx(model, target, "must_keep_origin_dtype")
    r["moved"] = n * 6
    return r


def matmul(target: targets.Target, m: int) -> dict:
    model = onnx_model(helper.make_node("MatMul", ["a", "b"], ["c"]),
                       [helper.make_tensor_value_info(v, TensorProto.FLOAT, [m, m]) for v in "ab"],
                       [helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, m])])
    r = run_onnx(model, target, "force_fp16")
    r["macs"] = m ** 3
    return r


def conv3x3(target: targets.Target, c: int, hw: int) -> dict:
    w = helper.make_tensor("w", TensorProto.FLOAT, [c, c, 3, 3],
                           (np.random.default_rng(1).standard_normal(c * c * 9) * 0.05).astype(np.float32))
    model = onnx_model(helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, hw, hw])], [w])
    r = run_onnx(model, target, "force_fp16")
    r["macs"] = hw * hw * c * c * 9
    return r


def rows(target: targets.Target) -> list[dict]:
    """The calibration rows: name, simulated, published, unit, source."""
    hz, t = target.clock_hz, target
    out = []

    def row(name, sim, pub, unit, source):
        out.append({"benchmark": name, "simulated": sim, "published": pub, "unit": unit, "ratio": sim / pub,
                    "source": source})

    one = gm_to_ub(t, 1 << 17, 1)
    row("GM->UB copy, 128 KB, 1 core", one["gb_s"], 100.9, "GB/s",
        "910B1 HBM->UB, 1 active core (ascend.md §6.4)")
    allc = gm_to_ub(t, 1 << 17, t.cores.vector)
    row(f"GM->UB copy, 128 KB on each of {t.cores.vector} cores", allc["gb_s"], t.dma.hbm_total, "GB/s",
        f"HBM total of {t.name}.toml")
    row("mmad, 1 fractal 16x16x16 f16", mmad_chain(t, 1), t.startup.cube + 1, "cycles",
        "1 fractal per cycle (4096 MAC, ascend.md §6.2) + cube start-up 20 (§6.4)")
    row("mmad, chain of 64 fractals", mmad_chain(t, 64), t.startup.cube + 64, "cycles",
        "pipelined: start-up once + 1 per fractal (ascend.md §6.2, §6.4)")
    for cls, elem, compute in ((isa.VAddOp, f16, 2), (isa.VExpOp, f16, 4), (isa.VExpOp, f32, 2),
                               (isa.VDivOp, f16, 8), (isa.VDivOp, f32, 4)):
        n = 64
        row(f"{cls.name.removeprefix('isa.')} {elem}, {n} repeats", vector_op(t, cls, elem, n),
            compute * n + t.startup.vector, "cycles",
            f"tilesim compute {compute} x repeats + start-up 35 (910B1, ascend.md §6.2, §6.4)")
    c = cast(t, 8 << 20)
    hbm = t.dma.hbm_total
    row("Cast f32 -> f16, 8 MB in (12 MB moved)", c["moved"] / (c["cycles"] / hz) / 1e9, hbm, "GB/s",
        f"HBM total of {t.name}.toml (memory-bound)")
    peak = t.cores.cube * 4096
    mm = matmul(t, 1024)
    row("MatMul 1024^3 f16", mm["macs"] / mm["cycles"] / peak, 1.0, "of Cube peak",
        f"{peak} MAC/cycle: {t.cores.cube} cores x 4096 (ascend.md §6.2, §6.3)")
    row("MatMul 1024^3, Cube busy", mm["cube_busy"] / (mm["cycles"] * mm["cores"]), 1.0, "of cycles x cores",
        "the Cube busy every cycle")
    cv = conv3x3(t, 256, 28)
    row("Conv 3x3, 256 -> 256 ch, 28x28", cv["macs"] / cv["cycles"] / peak, 1.0, "of Cube peak",
        f"{peak} MAC/cycle (ascend.md §6.2, §6.3)")
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default=targets.DEFAULT_TARGET)
    p.add_argument("--json", type=Path, default=RESULTS / "calibration.json")
    args = p.parse_args(argv)
    target = targets.load_target(args.target)
    table = rows(target)
    print(f"calibration on {target.name} ({target.clock_hz / 1e9:g} GHz):\n")
    print(markdown(["benchmark", "simulated", "published", "unit", "sim / published", "published figure from"],
                   ([r["benchmark"], f"{r['simulated']:,.4g}", f"{r['published']:,.4g}", r["unit"],
                     f"{r['ratio']:.2f}", r["source"]] for r in table)))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": target.name, "rows": table}, indent=1))
    print(f"\nwrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
