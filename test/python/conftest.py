"""Shared pytest configuration for ge's Python tests."""

import pytest

from ge.dialects.blobs import blob_scope


@pytest.fixture(autouse=True)
def _free_weights():
    """Forget the weight blobs each test registers: the store is process-global, and the
    model-level tests would otherwise keep every model's weights alive (over 20 GB)."""
    with blob_scope():
        yield


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache(tmp_path_factory):
    """Dynamic-shape models and torch.compile(dynamic=True) cache kernels on disk: give the
    test session its own empty cache so that no test reads an entry an earlier run wrote
    (a disk hit would skip the compile under test) or writes into the user's ~/.cache/ge."""
    patch = pytest.MonkeyPatch()
    patch.setenv("GE_CACHE_DIR", str(tmp_path_factory.mktemp("ge-kernel-cache")))
    yield
    patch.undo()


@pytest.fixture
def recorded(monkeypatch):
    """Every launch's CostModel, recording its GM transfers (the simulator's tests)."""
    from ge.runtime import simulator
    from ge.runtime.sim_timing import CostModel

    models: list[CostModel] = []

    class Recording(CostModel):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.transfers = []
            models.append(self)

    monkeypatch.setattr(simulator, "CostModel", Recording)
    return models
