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
    assert t.dma.l1_to_l0a == 441.0 and t.startup.mte2 == 50


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


def test_broken_file(tmp_path, monkeypatch):
    text = (Path(targets.__file__).parent / "ascend910.toml").read_text()
    monkeypatch.setattr(targets, "_DIR", tmp_path)
    (tmp_path / "nol1.toml").write_text(text.replace("l1 = 1048576", ""))
    with pytest.raises(TargetError, match=r"nol1\.toml: missing 'memory\.l1'"):
        load_target("nol1")
    (tmp_path / "neg.toml").write_text(text.replace("ub = 262144", "ub = -1"))
    with pytest.raises(TargetError, match=r"'memory\.ub' must be a non-negative number"):
        load_target("neg")
    (tmp_path / "arch.toml").write_text(text.replace('architecture = "coupled"', 'architecture = "fused"'))
    with pytest.raises(TargetError, match="'architecture' must be one of coupled, separated"):
        load_target("arch")


def test_module_attribute():
    module = ModuleOp([])
    assert target_of(module) is None
    assert set_target(module, "ascend910b").name == "ascend910b"
    assert module.attributes["ge.target"] == StringAttr("ascend910b")
    assert target_of(module) is load_target("ascend910b")
    module.attributes["ge.target"] = StringAttr("nope")
    with pytest.raises(TargetError, match="unknown target 'nope'"):
        target_of(module)
