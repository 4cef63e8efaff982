"""Fixtures shared by the whole suite; plain helpers live in `support.py`."""

from __future__ import annotations

import pytest

from support import run_cli


@pytest.fixture
def cli():
    return run_cli
