"""Fixtures shared by the whole suite; plain helpers live in `support.py`."""

from __future__ import annotations

import pytest

from support import group_for_workers, run_cli


@pytest.fixture
def cli():
    return run_cli


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``--dist loadgroup``, as ./scripts/test runs it): see ``support.group_for_workers``."""
    group_for_workers(items)
