"""Fixtures shared by the engine's parity tests."""

import pytest


@pytest.fixture
def torch_validating():
    """torch with its default distribution argument validation on (an earlier ``torch.compile``
    in the same process may have turned it off), restored afterwards."""
    torch = pytest.importorskip("torch")
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(before)
