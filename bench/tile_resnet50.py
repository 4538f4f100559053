"""ResNet-50's convolutions at the tile level: the chosen tiles and the modeled cycles next
to the roofline bound, per layer.

    python bench/tile_resnet50.py [--target ascend910] [--precision force_fp16] [--json bench/results/tile_resnet50.json]

The light resnet50 of the onnx wheel (seeded random weights: only the shapes matter) goes
through graph-optimize, assign-layouts, eliminate-trans-data, fuse, bufferize and tile.
For every Conv kernel: its shape, the tiles `tile` chose (M x N x K per mmad, K per L1
chunk, loop order, inner split, cores, buffer counts), the modeled cycles of the cost
model, and the roofline bound = max(compute at the Cube's peak on all cores, GM traffic of
the kernel's inputs and outputs at HBM bandwidth). Cycles, not times: no run needed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import ge
from ge import targets
from ge.dialects.blobs import blob_scope
from ge.ir import run_passes
from ge.lowering.tile import tile_module
from ge.testing import light_model_path, with_random_weights


def conv_rows(target: str, precision: str) -> list[dict]:
    with blob_scope():
        module = ge.load_onnx(with_random_weights(light_model_path("resnet50"), seed=1))
        run_passes(module, f"graph-optimize{{precision={precision}}},assign-layouts{{target={target}}},"
                           "eliminate-trans-data,fuse,bufferize")
        reports = tile_module(module, targets.load_target(target))
    rows = []
    for r in reports:
        p = r.problem
        if p is None or p.kind != "conv":
            continue
        cv, plan = p.conv, r.chosen
        rows.append({
            "kernel": r.name, "node": r.nodes[0] if r.nodes else r.name,
            "conv": f"{cv['c']}->{cv['co']} k{cv['kh']}x{cv['kw']} s{cv['strides'][0]} {cv['h']}x{cv['w']}",
            "epilogue": " ".join(o.name.split(".")[1] for o in p.epilogue_ops),
            "gemm": [p.m, p.n, p.k],
            "tiles": {"m": plan.tm, "n": plan.tn, "k": plan.tk, "k_l1": plan.kl1, "order": plan.order,
                      "split": plan.split, "blocks": plan.blocks,
                      "buffers": [plan.l1_buffers, plan.l0_buffers, plan.l0c_buffers, plan.ub_buffers]},
            "cycles": round(r.cycles), "compute": round(r.bound.compute), "gm": round(r.bound.memory),
            "bound": round(r.bound.bound),
        })
    return rows


def table(rows: list[dict]) -> str:
    head = ("| # | node | conv (Cin->Cout, kernel, stride, input) | tiles m x n x k (k per L1) | order | cores "
            "| modeled cycles | bound (compute, GM) | cycles / bound |")
    lines = [head, "|" + "---|" * 9]
    for i, r in enumerate(rows):
        t = r["tiles"]
        order = t["order"] + (f" split {t['split']}" if t["split"] > 1 else "")
        lines.append(
            f"| {i + 1} | {r['node']} | {r['conv']} | {t['m']} x {t['n']} x {t['k']} ({t['k_l1']}) | {order} "
            f"| {t['blocks']} | {r['cycles']} | {r['bound']} ({r['compute']}, {r['gm']}) | {r['cycles'] / r['bound']:.2f} |"
        )
    total_c, total_b = sum(r["cycles"] for r in rows), sum(r["bound"] for r in rows)
    lines.append(f"| | **total** | {len(rows)} convolutions | | | | {total_c} | {total_b} | {total_c / total_b:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="ascend910")
    parser.add_argument("--precision", default="force_fp16")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = conv_rows(args.target, args.precision)
    print(f"resnet50 convolutions on {args.target} ({args.precision}); cycles at {targets.load_target(args.target).clock_hz / 1e9:g} GHz\n")
    print(table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"target": args.target, "precision": args.precision, "convs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
