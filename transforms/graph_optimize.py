"""`graph-optimize{level=3 precision=force_fp16 debug=false}`: the graph-level pipeline that
GE/ATC users get by default, from ONNX import to the layout level (DESIGN.md §2).

Levels (each includes the ones below it):

- 0: no optimization; only the precision mode is applied.
- 1: `constant-fold` (weights, shape arithmetic, ConstantOfShape) and `dce` -- GE's O1.
- 2: + `simplify-graph` (Identity/Dropout/no-op removal, reshape and transpose chains,
  `x*1`/`x+0`, Gemm normalization) and `cse` -- onnxruntime's BASIC level minus fusions.
- 3 (default): + `fold-batch-norm` (BatchNorm and per-channel Mul/Add into Conv/Gemm/
  MatMul weights); the level-2/3 stages repeat until the graph stops changing -- what
  onnxruntime's BASIC level does (resnet50: 176 nodes -> 123).

Then `precision-mode{mode=<precision>}` (ATC `--precision_mode`; `force_fp16` by default,
as ATC for inference; `must_keep_origin_dtype` keeps f32) and, from level 2, a last
`simplify-graph` + `cse` + `dce` round over what the conversion left.

`debug=true` prints to stderr, per stage, the compute-op count (graph ops other than
`graph.constant`) before and after and what changed, then the op histograms of the whole
pipeline's input and output.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from ge.transforms.constant_fold import ConstantFoldPass
from ge.transforms.fold_batch_norm import FoldBatchNormPass
from ge.transforms.graph_utils import compute_ops, format_delta, format_histogram, histogram
from ge.transforms.precision import PrecisionModePass, normalize_mode
from ge.transforms.simplify_graph import SimplifyGraphPass

MAX_LEVEL = 3
MAX_ROUNDS = 4  # fold / simplify / fold-batch-norm rounds at level 3 (resnet50 needs 2)


def stages(level: int) -> list[ModulePass]:
    """The optimization stages of one round at `level` (precision comes after)."""
    out: list[ModulePass] = []
    if level >= 1:
        out.append(ConstantFoldPass())
    if level >= 2:
        out.append(SimplifyGraphPass())
    if level >= 3:
        out.append(FoldBatchNormPass())
    if level >= 2:
        out.append(CommonSubexpressionElimination())
    if level >= 1:
        out.append(DeadCodeElimination())
    return out


@dataclass(frozen=True)
class GraphOptimizePass(ModulePass):
    """Constant folding, DCE, CSE, simplification, BN folding, then a precision mode."""

    name = "graph-optimize"

    level: int = MAX_LEVEL
    precision: str = "force_fp16"
    debug: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.level <= MAX_LEVEL:
            raise ValueError(f"graph-optimize: level {self.level} is not one of 0..{MAX_LEVEL}")
        normalize_mode(self.precision)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mode = normalize_mode(self.precision)
        log = _Log(op, str(self)) if self.debug else None
        run = log.run if log else (lambda p, c, m: p.apply(c, m))
        before = None
        for _ in range(MAX_ROUNDS if self.level >= 2 else 1):
            for stage in stages(self.level):
                run(stage, ctx, op)
            after = histogram(op)
            if after == before:
                break
            before = after
        run(PrecisionModePass(mode=mode), ctx, op)
        if self.level >= 2 and mode != "must_keep_origin_dtype":
            for stage in (SimplifyGraphPass(), CommonSubexpressionElimination(), DeadCodeElimination()):
                run(stage, ctx, op)
        if log:
            log.finish()


class _Log:
    """The debug summary: one line per stage, histograms at both ends, on stderr."""

    def __init__(self, module: ModuleOp, spec: str):
        self.start = histogram(module)
        self.module = module
        print(f"// {spec}: {compute_ops(self.start)} compute ops in", file=sys.stderr)

    def run(self, stage: ModulePass, ctx: Context, module: ModuleOp) -> None:
        before = histogram(module)
        stage.apply(ctx, module)
        after = histogram(module)
        print(
            f"//   {stage!s:<48} {compute_ops(before):>5} -> {compute_ops(after):<5} {format_delta(before, after)}",
            file=sys.stderr,
        )

    def finish(self) -> None:
        end = histogram(self.module)
        print(f"// before ({compute_ops(self.start)} compute ops): {format_histogram(self.start)}", file=sys.stderr)
        print(f"// after  ({compute_ops(end)} compute ops): {format_histogram(end)}", file=sys.stderr)


