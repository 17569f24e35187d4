"""The vectorised erf behind exact GELU: double precision everywhere, dtype kept."""

from __future__ import annotations

import math

import numpy as np

from engine._ops._erf import erf


def test_erf_matches_math_erf_to_double_precision():
    x = np.concatenate([np.linspace(-30, 30, 60001), np.geomspace(1e-300, 6, 3000), -np.geomspace(1e-300, 6, 3000),
                        [0.0, 0.46875, -0.46875, 4.0, -4.0, 26.6, 27.0]])
    ref = np.array([math.erf(v) for v in x])
    got = erf(x)
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 2e-15


def test_erf_special_values_and_dtypes():
    out = erf(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0]))
    assert np.isnan(out[0]) and out[1] == 1.0 and out[2] == -1.0
    assert np.signbit(out[3]) and out[4] == 0.0
    assert erf(np.float32(0.3)).dtype == np.float32 and erf(np.float32(0.3)).shape == ()
    assert erf(np.arange(3)).dtype == np.float64
    x32 = np.linspace(-5, 5, 1001, dtype=np.float32)
    ref = np.array([math.erf(float(v)) for v in x32])
    assert np.max(np.abs(erf(x32) - ref) / np.maximum(np.abs(ref), 1e-30)) < 1.2e-7
