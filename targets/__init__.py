"""Hardware descriptions: one TOML data file per chip, read into a typed `Target`.

Every pass that needs a buffer size, an alignment, the cube's fractal shape, a bandwidth or
an instruction start-up cost reads it from here, never from a constant of its own. The
module being compiled names its chip in the `ge.target` attribute of its `builtin.module`
(`target_of(module)`); `load_target("ascend910")` reads `targets/ascend910.toml` once.

Each figure in the data files carries a comment with its source (or "estimate").
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp, StringAttr

from ge.errors import GeError

TARGET_ATTR = "ge.target"
DEFAULT_TARGET = "ascend910"
_DIR = Path(__file__).parent


class TargetError(GeError):
    """An unknown target name, or a target file that is missing a figure or has a wrong one."""


@dataclass(frozen=True)
class Cores:
    cube: int
    vector: int


@dataclass(frozen=True)
class Memory:
    """Capacities in bytes: per core for the local buffers, per chip for l2 and hbm."""

    l1: int
    l0a: int
    l0b: int
    l0c: int
    ub: int
    l2: int
    hbm: int


@dataclass(frozen=True)
class Alignment:
    """Start-address alignment of a buffer in each local memory, and of a tensor in GM
    (the model's memory plan), in bytes."""

    ub: int
    l1: int
    l0a: int
    l0b: int
    l0c: int
    gm: int


@dataclass(frozen=True)
class Vector:
    bytes_per_repeat: int
    max_repeats: int
    block_bytes: int


@dataclass(frozen=True)
class Dma:
    """GM traffic in GB/s: one core's rate on each path to / from GM (HBM, or L2 on a hit),
    and the chip's totals that every core and every concurrent launch share."""

    gm_to_l1: float
    gm_to_ub: float
    ub_to_gm: float
    l2_to_l1: float
    l2_to_ub: float
    l2_total: float
    hbm_total: float


@dataclass(frozen=True)
class OnChip:
    """One core's on-chip paths in bytes per cycle (of this chip's clock): what a transfer
    of n bytes occupies its pipe for is n / figure (no burst rounding inside the core)."""

    l1_to_l0a: float
    l1_to_l0b: float
    l1_to_ub: float
    ub_to_l1: float
    l0c_out: float  # FixPipe L0C -> GM / L1 / UB, or on a chip without FixPipe the Vector-unit route L0C -> UB


@dataclass(frozen=True)
class Overhead:
    """Cycles outside any pipe: a kernel launch, the full-core barrier between the
    sub-kernels of a SuperKernel (one launch running several kernels in turn), the scalar
    unit issuing one instruction, one iteration of a loop (its compare, increment and
    branch)."""

    launch: int
    sync_all: int
    issue: int
    loop: int


@dataclass(frozen=True)
class Isa:
    """Per-chip instruction-set facts: event ids per pipe pair of set_flag / wait_flag, and
    whether the core has a FixPipe (L0C -> GM / L1 directly) or sends L0C results through
    the Vector unit."""

    event_ids: int
    fixpipe: bool


@dataclass(frozen=True)
class Startup:
    """Fixed cycles before an instruction of each kind starts moving data or computing."""

    mte1: int
    mte2: int
    mte3: int
    vector: int
    cube: int
    fixpipe: int


@dataclass(frozen=True)
class Target:
    name: str
    soc_version: str
    architecture: str  # "coupled" (Cube and Vector in one core) or "separated" (AIC + AIV)
    clock_hz: float
    cores: Cores
    memory: Memory
    alignment: Alignment
    cube: dict[str, tuple[int, int, int]]  # input element type name -> fractal (m, k, n)
    vector: Vector
    dma: Dma
    onchip: OnChip
    overhead: Overhead
    startup: Startup
    isa: Isa
    vector_cost: dict[str, float | dict[str, float]]  # vector op -> cycles per repeat (per element type)

    def cube_fractal(self, elem: str) -> tuple[int, int, int] | None:
        """The Cube's (m, k, n) for inputs of element type `elem` ("f16", "i8", ...), or
        None when the Cube takes no such inputs on this chip."""
        return self.cube.get(elem)

    def vector_cycles(self, op: str, elem: str) -> float:
        """Cycles per 256-byte repeat of vector op `op` ("vadd", no prefix) on elements of
        type `elem`; the table's "default" for an op it does not list."""
        cost = self.vector_cost.get(op, self.vector_cost["default"])
        if isinstance(cost, dict):
            return cost.get(elem, cost["default"])
        return cost

    def bytes_per_cycle(self, gbs: float) -> float:
        """A GB/s figure in bytes per cycle of this chip's clock."""
        return gbs * 1e9 / self.clock_hz


_SECTIONS = {"cores": Cores, "memory": Memory, "alignment": Alignment, "vector": Vector, "dma": Dma,
             "onchip": OnChip, "overhead": Overhead, "startup": Startup}
_ARCHITECTURES = ("coupled", "separated")


def available_targets() -> list[str]:
    """Names of the chips with a data file in targets/."""
    return sorted(p.stem for p in _DIR.glob("*.toml"))


@functools.cache
def load_target(name: str) -> Target:
    """The chip described by `targets/<name>.toml` (read once per process)."""
    path = _DIR / f"{name}.toml"
    if not name.isidentifier() or not path.is_file():
        raise TargetError(f"unknown target '{name}'; known targets: {', '.join(available_targets())}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TargetError(f"{path.name}: not valid TOML: {e}") from None
    return _parse(path.name, data)


def _parse(file: str, data: dict) -> Target:
    def need(table: dict, key: str, where: str):
        if key not in table:
            raise TargetError(f"{file}: missing '{where}{key}'")
        return table[key]

    sections = {}
    for key, cls in _SECTIONS.items():
        table = need(data, key, "")
        values = {}
        for f in fields(cls):
            v = need(table, f.name, f"{key}.")
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
                raise TargetError(f"{file}: '{key}.{f.name}' must be a non-negative number, got {v!r}")
            values[f.name] = float(v) if f.type == "float" else int(v)
        sections[key] = cls(**values)
    cube = {}
    for elem, shape in need(data, "cube", "").items():
        if not (isinstance(shape, list) and len(shape) == 3 and all(isinstance(d, int) and d > 0 for d in shape)):
            raise TargetError(f"{file}: 'cube.{elem}' must be [m, k, n] of positive integers, got {shape!r}")
        cube[elem] = tuple(shape)
    isa_table = need(data, "isa", "")
    event_ids, fixpipe = need(isa_table, "event_ids", "isa."), need(isa_table, "fixpipe", "isa.")
    if isinstance(event_ids, bool) or not isinstance(event_ids, int) or not 1 <= event_ids <= 8:
        raise TargetError(f"{file}: 'isa.event_ids' must be an integer in 1..8, got {event_ids!r}")
    if not isinstance(fixpipe, bool):
        raise TargetError(f"{file}: 'isa.fixpipe' must be true or false, got {fixpipe!r}")
    vector_cost = _vector_cost(file, need(data, "vector_cost", ""))
    arch = need(data, "architecture", "")
    if arch not in _ARCHITECTURES:
        raise TargetError(f"{file}: 'architecture' must be one of {', '.join(_ARCHITECTURES)}, got {arch!r}")
    clock = need(data, "clock_hz", "")
    if not isinstance(clock, int | float) or clock <= 0:
        raise TargetError(f"{file}: 'clock_hz' must be a positive number, got {clock!r}")
    return Target(
        name=need(data, "name", ""), soc_version=need(data, "soc_version", ""), architecture=arch,
        clock_hz=float(clock), cube=cube, isa=Isa(event_ids, fixpipe), vector_cost=vector_cost, **sections,
    )


def _vector_cost(file: str, table: dict) -> dict[str, float | dict[str, float]]:
    """[vector_cost]: op = cycles, or op = {f16 = cycles, f32 = cycles, default = cycles}."""
    def number(v, where: str) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            raise TargetError(f"{file}: 'vector_cost.{where}' must be a positive number, got {v!r}")
        return float(v)

    out: dict[str, float | dict[str, float]] = {}
    for op, v in table.items():
        if isinstance(v, dict):
            if "default" not in v:
                raise TargetError(f"{file}: 'vector_cost.{op}' needs a 'default' entry")
            out[op] = {elem: number(c, f"{op}.{elem}") for elem, c in v.items()}
        else:
            out[op] = number(v, op)
    if "default" not in out:
        raise TargetError(f"{file}: missing 'vector_cost.default'")
    return out


def target_of(module: ModuleOp) -> Target | None:
    """The target named by the module's `ge.target` attribute, or None if it names none."""
    attr = module.attributes.get(TARGET_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, StringAttr):
        raise TargetError(f"the module's '{TARGET_ATTR}' attribute must be a string, got {attr}")
    return load_target(attr.data)


def set_target(module: ModuleOp, name: str) -> Target:
    """Record chip `name` on the module (checked) and return it."""
    target = load_target(name)
    module.attributes[TARGET_ATTR] = StringAttr(name)
    return target
