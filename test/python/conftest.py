"""Shared pytest configuration for ge's Python tests."""

import pytest

from ge.dialects.blobs import blob_scope


@pytest.fixture(autouse=True)
def _free_weights():
    """Forget the weight blobs each test registers: the store is process-global, and the
    model-level tests would otherwise keep every model's weights alive (over 20 GB)."""
    with blob_scope():
        yield
