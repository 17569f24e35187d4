"""Fixtures for the diagram tests (helpers live in ``helpers.py``)."""

from __future__ import annotations

import pytest

import engine

from .helpers import models


@pytest.fixture
def net():
    engine.manual_seed(0)
    return models.Net()


@pytest.fixture
def res():
    engine.manual_seed(0)
    return models.Res()
