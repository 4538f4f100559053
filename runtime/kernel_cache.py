"""The on-disk kernel cache of the dynamic-shape mode (`ge.dynamic`): one built model per
input-shape signature, kept across processes.

Layout: `<cache dir>/<model key>/<signature hash>.om`, the cache dir `$GE_CACHE_DIR` or
`~/.cache/ge`. The model key hashes the model's graph, the target and every compile option
that changes the result, so a changed model or option never meets an old entry. Each entry
is a complete model file (`ge.runtime.model_file`), whose SHA-256 header checksum covers
every byte, and its METADATA names the signature it was built for:

- writes go to a temporary file in the same directory, then `os.replace` -- atomic on
  POSIX, so concurrent writers of one entry each leave a whole file and readers never see a
  half-written one;
- a read that fails the checksum, does not decode, or holds another signature counts as
  corrupt: the entry is removed and the caller rebuilds it; a corrupt entry is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ge.errors import ModelFormatError

CACHE_ENV = "GE_CACHE_DIR"


def default_cache_dir() -> Path:
    """`$GE_CACHE_DIR`, else `~/.cache/ge`."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "ge"


def model_key(graph: bytes, target: str, options: dict[str, Any]) -> str:
    """The cache key of a model: its graph, target and compile options (JSON, sorted)."""
    digest = hashlib.sha256(graph)
    digest.update(b"\0" + target.encode() + b"\0" + json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:32]


def signature_text(shapes: dict[str, tuple[int, ...]]) -> str:
    """A shape signature as text: `input_ids=1x16;mask=1x16` (in input order)."""
    return ";".join(f"{n}={'x'.join(map(str, s))}" for n, s in shapes.items())


class KernelCache:
    """The entries of one model key under a cache directory."""

    def __init__(self, key: str, directory: str | Path | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.root = self.directory / key

    def path(self, signature: str) -> Path:
        return self.root / f"{hashlib.sha256(signature.encode()).hexdigest()[:32]}.om"

    def load(self, signature: str) -> tuple[Any, bool]:
        """(the cached model, False) -- or (None, corrupt?) when there is no usable entry;
        a corrupt entry has been removed."""
        from ge.runtime.model_file import load_model

        path = self.path(signature)
        if not path.is_file():
            return None, False
        try:
            model = load_model(path)
            if model.metadata.get("cache_signature") != signature:
                raise ModelFormatError(f"{path}: built for {model.metadata.get('cache_signature')!r}")
        except ModelFormatError:
            path.unlink(missing_ok=True)
            return None, True
        return model, False

    def store(self, signature: str, model) -> Path:
        """Write `model` as the entry of `signature` (atomically: temp file + os.replace)."""
        from ge.runtime.model_file import save_model

        self.root.mkdir(parents=True, exist_ok=True)
        model.metadata["cache_signature"] = signature
        path = self.path(signature)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=path.stem, suffix=".tmp")
        os.close(fd)
        try:
            save_model(tmp, model)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path
