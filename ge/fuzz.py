"""The differential fuzzer: random valid ONNX graphs through the NPU path vs onnxruntime.

    python -m ge.fuzz --seeds 0-999 [--precision f32|f16] [--plan-rank N] [--shrink] [--json out.json]

Each seed's graph (`ge.testing.random_graph`) is compiled by `ge.compile` down to the isa
level, run on the simulator and compared with onnxruntime on the same seeded input. Every
seed lands in one class:

- pass: the outputs match (f32: max error <= 1e-3 x the output's scale, max |ref|, plus
  1e-5; f16: <= 3e-2 x scale and cosine >= 0.999);
- wrong: the compile succeeded and the answer does not match, or the run failed (a hazard
  or race the simulator reports means the compiled kernels cannot be trusted) -- the worst
  outcome;
- traceback: an exception that is not a `GeError` (an internal error);
- refusal: a `GeError` (the message says what is not supported; the summary groups them
  by message with numbers and names stripped, so one missing feature is one line).

`--shrink` reduces each failing graph to a small reproducer (node bypasses and output
truncation while the same class and message persist) and saves it as .onnx next to the
JSON report.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx

PRECISIONS = {"f32": "must_keep_origin_dtype", "f16": "force_fp16"}
CLASSES = ("pass", "wrong", "traceback", "refusal")


@dataclass
class Outcome:
    seed: int
    status: str  # one of CLASSES
    detail: str = ""
    signature: str = ""  # the detail with numbers and names stripped (groups equal causes)
    error: float = 0.0  # max |got - ref| / scale
    nodes: int = 0
    seconds: float = 0.0
    reproducer: str | None = None


def signature(status: str, detail: str) -> str:
    """`detail` with the graph-specific parts (numbers, quoted names, node lists) stripped."""
    text = detail.splitlines()[0] if detail else ""
    text = re.sub(r"\(nodes? [^)]*\)", "(nodes)", text)
    text = re.sub(r"@\w+", "@k", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", text)
    text = re.sub(r"\b[a-z_]+\d+\b", "n", text)
    text = re.sub(r"\d+", "N", text)
    return f"{status}: {text[:160]}"


def reference(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def compare(got: np.ndarray, want: np.ndarray, precision: str) -> tuple[bool, float, str]:
    """(match, error relative to the output scale, what differs)."""
    if got.shape != want.shape:
        return False, float("inf"), f"shape {got.shape}, expected {want.shape}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.all(np.isfinite(g)) and np.array_equal(np.isfinite(g), np.isfinite(w)):
        g, w = np.where(np.isfinite(w), g, 0), np.where(np.isfinite(w), w, 0)
    scale = max(float(np.max(np.abs(w), initial=0.0)), 1e-6)
    err = float(np.max(np.abs(g - w), initial=0.0)) / scale
    if not np.isfinite(err):
        return False, float("inf"), "non-finite output"
    if precision == "f32":
        return err <= 1e-3 + 1e-5 / scale, err, f"max error {err:.2e} of the output scale {scale:.3g}"
    denom = float(np.linalg.norm(g) * np.linalg.norm(w))
    cos = float(np.dot(g.ravel(), w.ravel()) / denom) if denom > 0 else float(np.array_equal(g, w))
    ok = err <= 3e-2 and cos >= 0.999
    return ok, err, f"max error {err:.2e} of the output scale {scale:.3g}, cosine {cos:.5f}"


def check(model: onnx.ModelProto, inputs: dict[str, np.ndarray], precision: str = "f32",
          plan_rank: int = 0) -> tuple[str, str, float]:
    """Compile + simulate `model` and compare with onnxruntime: (status, detail, error).
    `plan_rank` > 0: every Cube problem takes the cost model's plan of that rank among the
    ones operator tuning times (`op_bank.Trial`; ge-aoe may pick any of them)."""
    import ge
    from ge.lowering import op_bank

    try:
        want = reference(model, inputs)
    except Exception as e:  # the generator made a graph onnxruntime rejects
        return "invalid", f"onnxruntime: {e}".splitlines()[0], 0.0
    from ge.lowering.fusion_legality import PROBE_BUGS

    probe_bugs = len(PROBE_BUGS)
    try:
        options = ge.CompileOptions(precision_mode=PRECISIONS[precision], kernel_level="isa", keep_ir_text=False)
        with op_bank.using(op_bank.Trial(choice=plan_rank) if plan_rank else None):
            compiled = ge.compile(model, options)
    except ge.GeError as e:
        return "refusal", f"{type(e).__name__}: {e}", 0.0
    except Exception as e:  # an internal error is exactly what we hunt
        frame = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return "traceback", f"{type(e).__name__} at {where}: {e}".splitlines()[0], 0.0
    if len(PROBE_BUGS) > probe_bugs:  # a fusion probe hit an internal error (it refused the group)
        return "traceback", f"fusion probe: {PROBE_BUGS[-1]}", 0.0
    try:
        outs = compiled.run(inputs)
    except ge.GeError as e:  # a compiled model that fails to run (e.g. KernelProblemError) is a bug
        return "wrong", f"run failed: {type(e).__name__}: {e}".splitlines()[0], math.inf
    except Exception as e:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return "traceback", f"{type(e).__name__} at {where}: {e}".splitlines()[0], 0.0
    worst = 0.0
    for o, w in zip(model.graph.output, want):
        ok, err, what = compare(np.asarray(outs[o.name]), np.asarray(w), precision)
        worst = max(worst, err)
        if not ok:
            return "wrong", f"output {o.name}: {what}", err
    return "pass", "", worst


def run_seed(seed: int, precision: str = "f32", conv1d: bool = False, max_ops: int = 8,
             plan_rank: int = 0) -> tuple[Outcome, onnx.ModelProto]:
    from ge.testing import random_graph, random_inputs

    start = time.perf_counter()
    model = random_graph(seed, conv1d=conv1d, max_ops=max_ops)
    status, detail, err = check(model, random_inputs(model, seed), precision, plan_rank)
    out = Outcome(seed, status, detail, signature(status, detail) if status != "pass" else "", err,
                  len(model.graph.node), round(time.perf_counter() - start, 2))
    return out, model


# --------------------------------------------------------------------------------------
# Shrinking
# --------------------------------------------------------------------------------------


def _shapes(model: onnx.ModelProto) -> dict[str, tuple]:
    inferred = onnx.shape_inference.infer_shapes(model)
    out = {}
    for vi in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
        tt = vi.type.tensor_type
        out[vi.name] = (tt.elem_type, tuple(d.dim_value for d in tt.shape.dim))
    for t in model.graph.initializer:
        out[t.name] = (t.data_type, tuple(t.dims))
    return out


def _prune(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop nodes and initializers the outputs do not need."""
    g = model.graph
    needed = {o.name for o in g.output}
    keep = []
    for n in reversed(list(g.node)):
        if any(o in needed for o in n.output):
            keep.append(n)
            needed.update(i for i in n.input if i)
    del g.node[:]
    g.node.extend(reversed(keep))
    inits = [t for t in g.initializer if t.name in needed]
    del g.initializer[:]
    g.initializer.extend(inits)
    return model


def _variants(model: onnx.ModelProto):
    """Smaller graphs: one node bypassed (its output replaced by a same-shaped input), or
    the graph cut at an intermediate value (made the only output)."""
    shapes = _shapes(model)
    nodes = list(model.graph.node)
    inits = {t.name for t in model.graph.initializer}
    for i in reversed(range(len(nodes))):
        n = nodes[i]
        out = n.output[0]
        for src in n.input:
            if not src or src in inits or shapes.get(src) != shapes.get(out):
                continue
            m = onnx.ModelProto.FromString(model.SerializeToString())
            del m.graph.node[i]
            for other in m.graph.node:
                for j, name in enumerate(other.input):
                    if name == out:
                        other.input[j] = src
            is_output = False
            for o in m.graph.output:
                if o.name == out:
                    o.name, is_output = src, True
            if not (is_output and src in {x.name for x in m.graph.input}):  # (an output that is an input)
                yield _prune(m)
            break
    for n in nodes[:-1]:
        out = n.output[0]
        if out not in shapes:
            continue
        m = onnx.ModelProto.FromString(model.SerializeToString())
        elem, dims = shapes[out]
        del m.graph.output[:]
        m.graph.output.append(onnx.helper.make_tensor_value_info(out, elem, dims))
        yield _prune(m)


def shrink(model: onnx.ModelProto, inputs: dict[str, np.ndarray], status: str, sig: str, precision: str = "f32",
           budget: int = 60, plan_rank: int = 0) -> onnx.ModelProto:
    """The smallest variant of `model` found (within `budget` checks) that still fails
    with the same class and message signature."""
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for cand in _variants(model):
            if len(cand.graph.node) >= len(model.graph.node):
                continue
            tries += 1
            s, detail, _ = check(cand, inputs, precision, plan_rank)
            if s == status and signature(s, detail) == sig:
                model, improved = cand, True
                break
            if tries >= budget:
                break
    return model


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def parse_seeds(spec: str) -> list[int]:
    """"0-99,200,300-310" -> the seeds."""
    seeds: list[int] = []
    for part in spec.split(","):
        lo, sep, hi = part.strip().partition("-")
        seeds.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return seeds


def summary(outcomes: list[Outcome]) -> str:
    counts = Counter(o.status for o in outcomes)
    total = len(outcomes)
    lines = [f"{total} seeds: " + ", ".join(f"{counts[c]} {c}" for c in CLASSES)
             + (f", {counts['invalid']} invalid" if counts["invalid"] else "")
             + (f" ({100 * counts['pass'] / total:.1f}% pass)" if total else "")]
    causes = Counter(o.signature for o in outcomes if o.status != "pass")
    for sig, n in causes.most_common():
        seeds = [o.seed for o in outcomes if o.signature == sig][:8]
        lines.append(f"  {n:4d}  {sig}   seeds {', '.join(map(str, seeds))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ge.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0-19", help="seed ranges, e.g. 0-999 or 0-9,50")
    ap.add_argument("--precision", choices=tuple(PRECISIONS), default="f32")
    ap.add_argument("--conv1d", action="store_true", help="1-D convolutions and pools (rank-3 feature maps)")
    ap.add_argument("--max-ops", type=int, default=8, help="patterns per graph (each is 1-6 nodes)")
    ap.add_argument("--plan-rank", type=int, default=0, metavar="N",
                    help="every Cube problem takes its N-th plan among those ge-aoe times (0: the cost model's)")
    ap.add_argument("--shrink", action="store_true", help="save a shrunk reproducer of every failing seed")
    ap.add_argument("--json", default="fuzz_results.json", help="where to write the per-seed results")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    from ge.dialects.blobs import blob_scope
    from ge.testing import random_inputs

    outcomes = []
    out_dir = Path(args.json).resolve().parent
    for seed in parse_seeds(args.seeds):
        with blob_scope():
            o, model = run_seed(seed, args.precision, args.conv1d, args.max_ops, args.plan_rank)
            if args.shrink and o.status in ("wrong", "traceback", "refusal"):
                small = shrink(model, random_inputs(model, seed), o.status, o.signature, args.precision,
                               plan_rank=args.plan_rank)
                o.reproducer = str(out_dir / f"fuzz_{args.precision}_seed{seed}.onnx")
                onnx.save(small, o.reproducer)
        outcomes.append(o)
        if not args.quiet:
            print(f"seed {seed}: {o.status} ({o.nodes} nodes, {o.seconds:.1f} s)"
                  + (f" {o.detail[:200]}" if o.detail else "") + (f" -> {o.reproducer}" if o.reproducer else ""),
                  flush=True)
    print(summary(outcomes))
    Path(args.json).write_text(json.dumps({"precision": args.precision, "conv1d": args.conv1d,
                                           "outcomes": [asdict(o) for o in outcomes]}, indent=1))
    return 0 if all(o.status in ("pass", "refusal") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
