"""Fixtures for the nn.Module parity suite: ``torch`` (the oracle, or a skip) and ``both``,
which runs one case function on ``engine`` and on ``torch`` and returns the two results in a
comparable form (see ``parity.plain``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import engine

from .parity import plain


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def both(torch) -> Callable[[Callable[[Any], Any]], tuple[Any, Any]]:
    def run(case: Callable[[Any], Any]) -> tuple[Any, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return plain(case(engine)), plain(case(torch))

    return run


@pytest.fixture(autouse=True)
def _no_leaked_global_hooks():
    """Global module hooks are process-wide: a test that forgets to remove one would change
    every later test, so fail it here."""
    from engine.nn.modules import module as m

    tables = (m._global_forward_pre_hooks, m._global_forward_hooks, m._global_backward_hooks,
              m._global_backward_pre_hooks, m._global_parameter_registration_hooks,
              m._global_buffer_registration_hooks, m._global_module_registration_hooks)
    yield
    assert not any(tables), "a test left a global module hook registered"
