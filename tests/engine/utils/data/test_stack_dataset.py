"""``utils.data.StackDataset`` against torch's: tuple and dict stacking, batched reads through the
parts' ``__getitems__``, a DataLoader over it, and torch's errors."""

from __future__ import annotations

import pytest

import engine

torch = pytest.importorskip("torch")
LIBS = [engine, torch]


class Batched:
    """A dataset with ``__getitems__`` (torch's batched-read protocol); ``short`` returns one item too few."""

    def __init__(self, n, short=False):
        self.n, self.short = n, short

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * 10

    def __getitems__(self, indices):
        return [i * 100 for i in indices][: len(indices) - self.short]


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_tuple_and_dict_stacks(lib):
    data = lib.utils.data
    a, b = data.TensorDataset(lib.arange(4)), [f"s{i}" for i in range(4)]
    stack = data.StackDataset(a, b)
    assert len(stack) == 4 and stack[2][1] == "s2"
    assert stack[2][0][0].item() == 2 and stack.datasets[1] is b
    named = data.StackDataset(x=b, y=Batched(4))
    assert named[1] == {"x": "s1", "y": 10}
    assert named.__getitems__([0, 3]) == [{"x": "s0", "y": 0}, {"x": "s3", "y": 300}]
    assert data.StackDataset(b, Batched(4)).__getitems__([1, 2]) == [("s1", 100), ("s2", 200)]
    batches = list(data.DataLoader(data.StackDataset(lib.arange(6), lib.arange(6) * 2), batch_size=4))
    assert [batch[1].tolist() for batch in batches] == [[0, 2, 4, 6], [8, 10]]


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    ((), {}, "At least one dataset should be passed"),
    (([1, 2], [1]), {}, "Size mismatch between datasets"),
    ((), {"a": [1, 2], "b": [1]}, "Size mismatch between datasets"),
    (([1],), {"b": [1]}, "Supported either ``tuple``- \\(via ``args``\\) or``dict``- \\(via ``kwargs``\\) like "
                         "input/output, but both types are given."),
])
def test_errors(args, kwargs, match):
    for lib in LIBS:
        with pytest.raises(ValueError, match=match):
            lib.utils.data.StackDataset(*args, **kwargs)


def test_nested_size_mismatch():
    for lib in LIBS:
        with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
            lib.utils.data.StackDataset([1, 2], Batched(2, short=True)).__getitems__([0, 1])
