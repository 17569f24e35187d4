"""The glibc allocator tuning applied when engine.nn.functional is imported."""

from __future__ import annotations

import os
import sys

import pytest

from engine.nn._functional import _allocator


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_applies_on_linux(monkeypatch):
    for key in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(key)
    assert _allocator.tune_malloc() is True


def test_user_malloc_settings_win(monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1000")
    assert _allocator.tune_malloc() is False


def test_other_platforms_are_left_alone(monkeypatch):
    monkeypatch.setattr(_allocator.sys, "platform", "darwin")
    assert _allocator.tune_malloc() is False


def test_a_libc_without_mallopt_is_left_alone(monkeypatch):
    for key in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(key)
    monkeypatch.setattr(_allocator.sys, "platform", "linux")

    def no_libc(*args, **kwargs):
        raise OSError("no libc here")

    monkeypatch.setattr(_allocator.ctypes, "CDLL", no_libc)
    assert _allocator.tune_malloc() is False
