"""Races between the cores of a launch: the blocks of a launch run on different cores with
nothing ordering them, so a GM byte one block writes and another writes or reads is a race,
even though the simulator runs the blocks one after another. Hand-built isa launches with
overlapping and disjoint GM accesses; a model whose kernel code was edited so that every
block writes the same bytes makes the API raise and `ge-run` exit 1 (`--allow-hazards`
runs on and lists the race).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from xdsl.dialects.builtin import f16

import ge
from ge.dialects import isa
from ge.dialects.blobs import blob_scope
from ge.dialects.isa import MemSpace as S
from ge.ir import run_passes
from ge.lowering.isa_builder import IsaBuilder
from ge.runtime import model_file as mf
from ge.runtime.executor import KernelProblemError
from ge.runtime.simulator import run_kernel
from ge.testing import two_branch_model

TILE = 128  # f16 elements a block copies: 256 bytes
F32 = "must_keep_origin_dtype"


def copy_kernel(step: int, read_back: bool = False) -> isa.KernelOp:
    """Two blocks; block b copies x[b*step : b*step + TILE] to the same place of z (through
    UB). With `read_back` block b then reads z[(1-b)*step ...] back into UB: the bytes
    the other block writes."""
    n = step + TILE
    t = isa.buffer_type([n], f16, S.GM)
    b = IsaBuilder.new_kernel("race", [t], [t], 2, ["x", "z"])
    x, z = b.args
    (ub,) = b.buffer(S.UB, [TILE], f16, 1, "ub")
    off = b.value(b.mul(b.block_idx(), step, "off"))
    b.add(isa.CopyGmToUbOp(x, ub, [TILE], src_offset=off))
    b.add(isa.SetFlagOp(isa.Pipe.MTE2, isa.Pipe.MTE3, 0))
    b.add(isa.WaitFlagOp(isa.Pipe.MTE2, isa.Pipe.MTE3, 0))
    b.add(isa.CopyUbToGmOp(ub, z, [TILE], dst_offset=off))
    if read_back:
        other = b.value(b.mul(b.sub(1, b.block_idx()), step, "other"))
        b.add(isa.SetFlagOp(isa.Pipe.MTE3, isa.Pipe.MTE2, 0))
        b.add(isa.WaitFlagOp(isa.Pipe.MTE3, isa.Pipe.MTE2, 0))
        b.add(isa.CopyGmToUbOp(z, ub, [TILE], src_offset=other))
    return b.kernel


def simulate(kernel: isa.KernelOp):
    from xdsl.dialects.builtin import ModuleOp, StringAttr

    module = ModuleOp([kernel])
    module.attributes["ge.target"] = StringAttr("ascend910")
    module = run_passes(module, "plan-local-memory")
    kernel = next(op for op in module.walk() if isinstance(op, isa.KernelOp))
    n = isa.num_elements(kernel.body.block.args[0].type)
    x = np.arange(n).astype(np.float16)
    z = np.zeros(n, np.float16)
    report, _ = run_kernel(module, [x, z])
    return report, x, z


def test_overlapping_writes_of_two_blocks_are_a_race():
    report, _, _ = simulate(copy_kernel(TILE // 2))
    races = [p for p in report.problems if p.kind == "race"]
    assert len(races) == 1 and races[0].is_hazard and report.hazards == races
    msg = races[0].message
    # block 1 writes elements [64, 192) = bytes [0x80, 0x180); block 0 wrote [0, 0x100)
    assert "isa.copy_ub_to_gm" in msg and "[kernel @race, block 1]" in msg and "block 0" in msg
    assert "bytes [0x80, 0x100) of %z (gm argument #1)" in msg


def test_disjoint_writes_are_not_a_race():
    report, x, z = simulate(copy_kernel(TILE))
    assert report.problems == []
    np.testing.assert_array_equal(z, x)  # both halves copied


def test_reading_what_another_block_writes_is_a_race():
    report, _, _ = simulate(copy_kernel(TILE, read_back=True))
    races = sorted(p.message for p in report.problems if p.kind == "race")
    # block 1 reads back what block 0 wrote, and writes what block 0 read back
    assert len(races) == 2, races
    assert races[0].startswith("isa.copy_gm_to_ub #6: reads bytes [0x0, 0x100) of %z (gm argument #1), which block 0 "
                               "of the launch wrote") and races[0].endswith("[kernel @race, block 1]")
    assert races[1].startswith("isa.copy_ub_to_gm #3: writes bytes [0x100, 0x200) of %z (gm argument #1), which "
                               "block 0 of the launch accessed")


def _racy_model_file(tmp_path) -> str:
    """A compiled model whose first multi-block kernel writes its output at offset 0 in
    every block (its copy_ub_to_gm offsets removed from the kernel code)."""
    with blob_scope():
        compiled = ge.compile(two_branch_model(), ge.CompileOptions(precision_mode=F32, keep_ir_text=False))
    model = compiled.model
    part = model.kernels
    edited = 0
    for ref in part["kernels"].values():
        body = part["bodies"][ref["body"]]
        if body["block_dim"] < 2 or edited:
            continue

        def clear(code):
            nonlocal edited
            for rec in code:
                if rec["op"] == "isa.copy_ub_to_gm" and rec["opnds"]["dst"][1] is not None:
                    rec["opnds"]["dst"][1] = None  # [buffer, offset register]
                    edited += 1
                clear(rec.get("body", []))

        clear(body["code"])
    assert edited, "no multi-block kernel writes GM"
    path = str(tmp_path / "racy.om")
    mf.save_model(path, model)
    return path


def test_a_race_fails_the_run_unless_allowed(tmp_path):
    path = _racy_model_file(tmp_path)
    model = ge.load_model(path)
    x = {"x": np.ones((32, 64), np.float32)}
    with pytest.raises(KernelProblemError, match=r"race: .*blocks run on different cores"):
        model.run(x)
    model.run(x, allow_hazards=True)
    assert any(p.kind == "race" for p in model.last_run.problems)

    run = [sys.executable, "-m", "ge.tools.ge_run", path]
    failed = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ge-run: error: ") and "race:" in lines[0]
    allowed = subprocess.run([*run, "--allow-hazards"], capture_output=True, text=True, timeout=300)
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: the simulator reported" in allowed.stdout and "race:" in allowed.stdout
