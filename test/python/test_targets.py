"""The chip descriptions in targets/: the loader, the figures the issue names, a source for
every figure, agreement with the layout formats, and errors for bad names and files."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.lowering.assign_layouts import check_target
from ge.targets import Target, TargetError, available_targets, load_target, set_target, target_of

KB = 1024


def test_three_chips_ship():
    assert available_targets() == ["ascend310b", "ascend910", "ascend910b"]
    for name in available_targets():
        t = load_target(name)
        assert isinstance(t, Target) and t.name == name
        assert load_target(name) is t  # read once


def test_ascend910_figures():
    t = load_target("ascend910")
    assert t.architecture == "coupled" and t.cores.cube == 32 and t.clock_hz == 1.0e9
    m = t.memory
    assert (m.ub, m.l1, m.l0a, m.l0b, m.l0c) == (256 * KB, 1024 * KB, 64 * KB, 64 * KB, 256 * KB)
    assert t.cube_fractal("f16") == (16, 16, 16) and t.cube_fractal("i8") == (16, 32, 16)
    assert t.cube_fractal("f32") is None
    assert t.vector.bytes_per_repeat == 256 and t.vector.max_repeats == 255


def test_ascend910b_figures():
    t = load_target("ascend910b")
    assert t.architecture == "separated" and (t.cores.cube, t.cores.vector) == (24, 48)
    assert t.clock_hz == 1.85e9 and t.dma.hbm_total == 1600.0
    m = t.memory
    assert (m.ub, m.l1, m.l0a, m.l0b, m.l0c) == (192 * KB, 512 * KB, 64 * KB, 64 * KB, 128 * KB)
    assert t.startup.mte2 == 50
    assert t.onchip.l1_to_l0a == pytest.approx(441.0e9 / t.clock_hz, rel=1e-3)  # 441 GB/s at 1.85 GHz
    assert t.isa.event_ids == 8 and t.isa.fixpipe


def test_per_chip_isa_facts():
    """The coupled 910 has 4 event ids per pipe pair and no FixPipe; the A2 parts 8 and FixPipe."""
    t910 = load_target("ascend910")
    assert (t910.isa.event_ids, t910.isa.fixpipe) == (4, False)
    assert (load_target("ascend310b").isa.event_ids, load_target("ascend910b").isa.event_ids) == (8, 8)


@pytest.mark.parametrize("name", ["ascend310b", "ascend910", "ascend910b"])
def test_on_chip_paths_are_bytes_per_cycle_of_the_chip(name):
    """The 910B's measured GB/s become bytes per cycle at its 1.85 GHz, and the other chips
    take the same per-cycle widths (not the GB/s at their own clock)."""
    t = load_target(name)
    assert t.onchip.l1_to_l0a == pytest.approx(441.0 / 1.85, rel=1e-3)
    assert t.onchip.l1_to_l0b == pytest.approx(220.5 / 1.85, rel=1e-3)
    assert t.bytes_per_cycle(t.dma.hbm_total) == t.dma.hbm_total * 1e9 / t.clock_hz


def test_vector_costs_by_op_and_type():
    t = load_target("ascend910b")
    assert t.vector_cycles("vadd", "f16") == 2 and t.vector_cycles("vadd", "f32") == 2
    assert (t.vector_cycles("vdiv", "f16"), t.vector_cycles("vdiv", "f32")) == (8, 4)
    assert (t.vector_cycles("vexp", "f16"), t.vector_cycles("vexp", "f32")) == (4, 2)
    assert t.vector_cycles("vdiv", "i32") == 8  # the op's default
    assert t.vector_cycles("vnot", "f16") == 1  # the table's default


@pytest.mark.parametrize("name", ["ascend310b", "ascend910", "ascend910b"])
def test_alignments(name):
    a = load_target(name).alignment
    assert (a.ub, a.l1, a.l0a, a.l0b, a.l0c) == (32, 32, 512, 512, 512)


@pytest.mark.parametrize("name", ["ascend310b", "ascend910", "ascend910b"])
def test_every_figure_has_a_source(name):
    """Each `key = number` line carries a comment, or sits in a table whose header or
    preceding comment line gives the source for all its figures."""
    lines = (Path(targets.__file__).parent / f"{name}.toml").read_text().splitlines()
    cites = re.compile(r"ascend\.md|estimate|\.td|\.ini|\.json")
    source = False  # a comment that covers the figures below it
    for line in lines:
        if line.startswith("["):
            source = bool(cites.search(line))
        elif line.startswith("#"):
            source = source or bool(cites.search(line))
        elif re.match(r"\s*\w+\s*=\s*[\d\[.]", line):
            assert "#" in line or source, f"{name}.toml: no source for '{line.strip()}'"


@pytest.mark.parametrize("name", ["ascend310b", "ascend910", "ascend910b"])
def test_targets_fit_the_layout_formats(name):
    check_target(load_target(name))  # 32-byte blocks, 16-row fractals, k * size = 32 B


def test_a_chip_with_other_fractals_is_refused():
    t = load_target("ascend910")
    odd = dataclasses.replace(t, cube={"f16": (32, 16, 32)})
    with pytest.raises(PassFailedException, match="f16 Cube fractal 32x16x32"):
        check_target(odd)


def test_unknown_target_names_the_known_ones():
    with pytest.raises(TargetError, match="unknown target 'ascend999'; known targets: ascend310b, ascend910, ascend910b"):
        load_target("ascend999")
    with pytest.raises(TargetError, match="unknown target"):
        load_target("../ascend910")


BROKEN = [  # (file name, text replaced in ascend910.toml, by, expected message)
    ("nol1", "l1 = 1048576", "", r"nol1\.toml: missing 'memory\.l1'"),
    ("neg", "ub = 262144", "ub = -1", r"'memory\.ub' must be a non-negative number"),
    ("arch", 'architecture = "coupled"', 'architecture = "fused"', "'architecture' must be one of coupled, separated"),
    ("ids", "event_ids = 4", "event_ids = 16", r"'isa\.event_ids' must be an integer in 1\.\.8, got 16"),
    ("fix", "fixpipe = false", "fixpipe = 0", r"'isa\.fixpipe' must be true or false"),
    ("vec", "vadd = 2 ", "vadd = 0 ", r"'vector_cost\.vadd' must be a positive number"),
    ("vdef", "vdiv = { f16 = 8, f32 = 4, default = 8 }", "vdiv = { f16 = 8 }",
     r"'vector_cost\.vdiv' needs a 'default' entry"),
]


@pytest.mark.parametrize(("name", "old", "new", "message"), BROKEN)
def test_broken_file(tmp_path, monkeypatch, name, old, new, message):
    text = (Path(targets.__file__).parent / "ascend910.toml").read_text()
    assert old in text
    monkeypatch.setattr(targets, "_DIR", tmp_path)
    (tmp_path / f"{name}.toml").write_text(text.replace(old, new))
    with pytest.raises(TargetError, match=message):
        load_target(name)


def test_module_attribute():
    module = ModuleOp([])
    assert target_of(module) is None
    assert set_target(module, "ascend910b").name == "ascend910b"
    assert module.attributes["ge.target"] == StringAttr("ascend910b")
    assert target_of(module) is load_target("ascend910b")
    module.attributes["ge.target"] = StringAttr("nope")
    with pytest.raises(TargetError, match="unknown target 'nope'"):
        target_of(module)
