"""``capture.torch.summaries.capture_all``: its written-out path for one tensor (alone, or the only
item of a tuple: a module's usual input, a single gradient) gives what the general walk over
the value's leaves (``values.capture_leaves``) gives."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from modscope.capture.torch import summaries  # noqa: E402
from modscope.capture.values import capture_leaves  # noqa: E402


def _values():
    t = torch.randn(3, 4, requires_grad=True) * 2
    p = torch.nn.Parameter(torch.ones(2))
    return {"tensor": t, "(tensor,)": (t,), "parameter": (p,), "(tensor, None)": (t, None), "[tensor]": [t],
            "((tensor,),)": ((t,),), "(None,)": (None,), "()": (), "int": 3, "{'a': tensor}": {"a": t},
            "0-d": (torch.tensor(1.5),), "int64": (torch.arange(4),)}


@pytest.mark.parametrize("name", list(_values()))
@pytest.mark.parametrize("tid", [True, False])
@pytest.mark.parametrize("stats", [False, True])
def test_capture_all_gives_what_the_walk_over_the_leaves_gives(name, tid, stats):
    value = _values()[name]
    summaries.forget_arrays()
    fast = summaries.capture_all(value, tid=tid, stats=stats)
    summaries.forget_arrays()
    walked = capture_leaves(value, torch.Tensor, summaries._capture, tid, stats)
    assert len(fast) == len(walked)
    for a, b in zip(fast, walked, strict=True):
        if a is None or b is None:
            assert a is b
            continue
        assert type(a[0]) is tuple and a[:2] == b[:2]  # a plain tuple of ints, the dtype
        assert (a[2] is None) == (not tid)
        assert a[3:] == b[3:]  # the statistics (NaN-free values)
