"""Shape gears: the static input-shape assignments a dynamic-gear model is compiled for.

ATC offers three mutually exclusive gear options, each used with an `--input_shape` that
holds -1 for the dims that vary; ge reads all three into one notion, a `Gear` = a full
input-shape assignment, so the compiler, the model file and the executor treat them alike:

- `dynamic_batch_size "1,2,4"`: -1 only as the first dim; each value is the batch of a gear.
- `dynamic_image_size "224,224;320,320"`: every dynamic input is 4-D NCHW (-1 at dims 2, 3)
  or NHWC (-1 at dims 1, 2); each gear gives (height, width) for all of them.
- `dynamic_dims "16,16,16;32,32,32"`: each gear gives the values of every -1 of the input
  shape, across all inputs in their order in `input_shape`.

As ATC, a gear option takes at most `MAX_GEARS` (100) gears, and the image-size and dims
options at least two (ATC: gear count in (1, 100]); ge also accepts a single batch size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ge.errors import ShapeError

MAX_GEARS = 100  # ATC: "档位数取值范围为(1,100]" for all three gear options
GEAR_OPTIONS = ("dynamic_batch_size", "dynamic_image_size", "dynamic_dims")


@dataclass(frozen=True)
class Gear:
    """One compiled variant: `shapes` gives every input's static shape. `kind` is the gear
    option (None for a static model) and `values` that option's values for this gear."""

    shapes: Mapping[str, tuple[int, ...]]
    kind: str | None = None
    values: tuple[int, ...] = ()

    @property
    def batch(self) -> int | None:
        return self.values[0] if self.kind == "dynamic_batch_size" else None

    @property
    def label(self) -> str:
        """How errors and reports name the gear: `batch=4`, `224x224`, `dims=16,16,16`."""
        if self.kind is None:
            return "static"
        if self.kind == "dynamic_batch_size":
            return f"batch={self.values[0]}"
        if self.kind == "dynamic_image_size":
            return "x".join(map(str, self.values))
        return "dims=" + ",".join(map(str, self.values))

    @property
    def prefix(self) -> str:
        """The kernel-symbol prefix of this gear in a pooled model file."""
        if self.kind is None:
            return ""
        if self.kind == "dynamic_batch_size":
            return f"b{self.values[0]}_"
        return ("hw" if self.kind == "dynamic_image_size" else "d") + "_".join(map(str, self.values)) + "_"


def _cli(kind: str) -> str:
    return kind.replace("_", "-")


def _parse_values(kind: str, spec: str | Sequence) -> list[tuple[int, ...]]:
    """"1,2,4" (batch) or "h,w;h,w" / "d,d;d,d" -> one tuple per gear (lists accepted too)."""
    if isinstance(spec, str):
        if kind == "dynamic_batch_size":
            items = [s for s in spec.split(",") if s.strip()]
            groups = [[s] for s in items]
        else:
            groups = [g.split(",") for g in spec.split(";") if g.strip()]
    else:
        groups = [[g] if isinstance(g, int) else list(g) for g in spec]
    try:
        gears = [tuple(int(str(v).strip()) for v in g) for g in groups]
    except ValueError:
        form = "a comma-separated list of integers" if kind == "dynamic_batch_size" else \
            "gears separated by ';', each a comma-separated list of integers"
        raise ShapeError(f"{kind} '{spec}' must be {form}") from None
    if not gears or any(v <= 0 for g in gears for v in g) or len(set(gears)) != len(gears):
        what = "batch sizes" if kind == "dynamic_batch_size" else "gears of positive integers"
        raise ShapeError(f"{kind} {[list(g) for g in gears] if kind != 'dynamic_batch_size' else [g[0] for g in gears]} "
                         f"must list distinct positive {what}")
    if len(gears) > MAX_GEARS:
        raise ShapeError(f"{kind} lists {len(gears)} gears; at most {MAX_GEARS} are allowed (as ATC)")
    if kind != "dynamic_batch_size" and len(gears) < 2:
        raise ShapeError(f"{kind} lists 1 gear; give at least 2 (as ATC), or compile a static input_shape")
    return gears


def parse_gears(input_shape, dynamic_batch_size=None, dynamic_image_size=None, dynamic_dims=None) -> list[Gear]:
    """The gears to compile: one `Gear` per gear of the one gear option given, or one static
    gear. A -1 in `input_shape` needs exactly one gear option and vice versa."""
    from ge.frontend.onnx import parse_input_shape

    shapes = parse_input_shape(input_shape)
    given = {k: v for k, v in zip(GEAR_OPTIONS, (dynamic_batch_size, dynamic_image_size, dynamic_dims))
             if v is not None and v != ""}
    if len(given) > 1:
        raise ShapeError(f"{' and '.join(_cli(k) for k in given)} cannot be used together: give one gear option")
    dynamic = [n for n, s in shapes.items() if -1 in s]
    if not given:
        if dynamic:
            raise ShapeError(f"input_shape gives -1 for {', '.join(map(repr, dynamic))}: list the gears to compile "
                             "with dynamic_batch_size (e.g. \"1,2,4,8\"), dynamic_image_size (e.g. \"224,224;320,320\") "
                             "or dynamic_dims (e.g. \"16;32;64\")")
        return [Gear(shapes)]
    (kind, spec), = given.items()
    gears = _parse_values(kind, spec)
    if not dynamic:
        example = {"dynamic_batch_size": "x:-1,3,224,224", "dynamic_image_size": "x:1,3,-1,-1",
                   "dynamic_dims": "input_ids:1,-1"}[kind]
        raise ShapeError(f"{kind} needs an input_shape with -1 for the dims that vary (e.g. \"{example}\")")
    _check_positions(kind, shapes, dynamic)
    slots = [(n, i) for n in dynamic for i, d in enumerate(shapes[n]) if d == -1]
    out = []
    for values in gears:
        if kind == "dynamic_batch_size":
            fill = list(values) * len(slots)
        elif kind == "dynamic_image_size":
            if len(values) != 2:
                raise ShapeError(f"dynamic_image_size gear {','.join(map(str, values))} must give height,width")
            fill = list(values) * len(dynamic)
        else:
            if len(values) != len(slots):
                raise ShapeError(f"dynamic_dims gear {','.join(map(str, values))} gives {len(values)} value(s); "
                                 f"input_shape has {len(slots)} -1 dim(s) ({_slots(slots)})")
            fill = list(values)
        gear_shapes = {n: list(s) for n, s in shapes.items()}
        for (n, i), v in zip(slots, fill):
            gear_shapes[n][i] = v
        out.append(Gear({n: tuple(s) for n, s in gear_shapes.items()}, kind, tuple(values)))
    return out


def _slots(slots: list[tuple[str, int]]) -> str:
    return ", ".join(f"{n}[{i}]" for n, i in slots)


def _check_positions(kind: str, shapes: Mapping[str, tuple[int, ...]], dynamic: list[str]) -> None:
    for name in dynamic:
        s = list(shapes[name])
        where = [i for i, d in enumerate(s) if d == -1]
        if kind == "dynamic_batch_size" and where != [0]:
            raise ShapeError(f"input_shape '{name}': -1 may only stand for the batch (first) dimension, got {s}")
        if kind == "dynamic_image_size" and not (len(s) == 4 and where in ([2, 3], [1, 2])):
            raise ShapeError(f"input_shape '{name}': dynamic_image_size needs a 4-D NCHW or NHWC input with -1 as "
                             f"height and width (e.g. 1,3,-1,-1), got {s}")
