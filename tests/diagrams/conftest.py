"""Fixtures for the diagram tests (helpers live in ``helpers.py``): the fixture models built with
``lib``, so a test that takes ``models``, ``net`` or ``res`` runs on both capture backends."""

from __future__ import annotations

import pytest

from .helpers import define


@pytest.fixture(scope="session")
def models(lib):
    """``diagram_models.define(lib)``: the fixture models' classes for this backend."""
    return define(lib)


@pytest.fixture
def net(lib, models):
    lib.manual_seed(0)
    return models.Net()


@pytest.fixture
def res(lib, models):
    lib.manual_seed(0)
    return models.Res()
