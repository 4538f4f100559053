"""Load-time checks of a model file's contents against its own signature and its chip.

Where it sits: `ge.runtime.model_file.read_model` calls `check_model` after its structural
checks (partitions, offsets, ids), before anything runs. These catch a file that is
well-formed but cannot be what ge built for the chip it names -- a file edited and re-saved,
or built for another chip:

- every graph input / output the METADATA lists agrees with its tensor in MODEL_DEF (rank,
  dims, dtype; -1 only where a dynamic-gear model's gears differ), so the executor never
  meets a bare numpy reshape error;
- every kernel and launch asks for at most as many AI cores as the target has (the tiler
  splits work over the target's cores, so a larger block_dim means another chip's file).

Each fault raises `InconsistentModelError` naming the file and the input, task or kernel.
"""

from __future__ import annotations

from ge.errors import ModelFormatError


def _inconsistent(message: str) -> ModelFormatError:
    from ge.runtime.model_file import InconsistentModelError

    return InconsistentModelError(message)


def _shown(shape: list[int]) -> str:
    return "[" + ", ".join("N" if d == -1 else str(d) for d in shape) + "]"


def check_signature(model, name: str) -> None:
    """The METADATA inputs / outputs (and each gear's) agree with their MODEL_DEF tensors."""
    tensors = model.definition["tensors"]
    from ge.runtime.model_file import gear_label

    scopes = [("", model.metadata)] + [(f"gear {gear_label(g)}: ", g) for g in model.metadata.get("gears", [])
                                       if "inputs" in g]
    for prefix, scope in scopes:
        for kind in ("input", "output"):
            for io in scope[kind + "s"]:
                t = tensors[io["tensor"]]
                shape, want = list(io.get("shape", [])), list(t["shape"])
                agrees = len(shape) == len(want) and all(d in (-1, w) for d, w in zip(shape, want))
                if not agrees or io.get("dtype") != t["dtype"]:
                    raise _inconsistent(
                        f"{name}: {prefix}{kind} '{io['name']}' is {_shown(shape)} {io.get('dtype')} in the "
                        f"metadata, but its tensor #{io['tensor']} is {_shown(want)} {t['dtype']}; the file was "
                        "edited or re-saved inconsistently: compile the model again"
                    )


def check_block_dims(model, name: str) -> None:
    """No kernel or launch asks for more AI cores than the model's target has."""
    from ge import targets

    target_name = model.metadata.get("target") or targets.DEFAULT_TARGET
    try:
        target = targets.load_target(target_name)
    except targets.TargetError as e:
        raise _inconsistent(f"{name}: the model names an unknown target: {e}") from None
    cores = max(target.cores.cube, target.cores.vector)
    kernels = model.definition["kernels"]
    for k in kernels:
        if not 1 <= int(k.get("block_dim", 1)) <= cores:
            raise _inconsistent(f"{name}: kernel @{k['name']} has block_dim {k['block_dim']}, but {target.name} has "
                                f"{cores} AI cores (was the file built for another chip?)")
    for j, t in enumerate(model.tasks):
        if t["op"] == "launch" and not 1 <= int(t.get("block_dim", 1)) <= cores:
            kernel = kernels[t["kernel"]]["name"]
            raise _inconsistent(f"{name}: task #{j} (launch of @{kernel}) has block_dim {t['block_dim']}, but "
                                f"{target.name} has {cores} AI cores (was the file built for another chip?)")


def check_model(model, name: str) -> None:
    """All load-time checks of this module (see the module docstring)."""
    try:
        check_signature(model, name)
        check_block_dims(model, name)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise _inconsistent(f"{name}: the model definition is malformed ({type(e).__name__}: {e})") from None
