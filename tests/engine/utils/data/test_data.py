"""engine.utils.data: collate rules against torch's, DataLoader batching, shuffling with seeded
generators, drop_last, len, the vectorised TensorDataset path, samplers, splits, and errors."""

from __future__ import annotations

import collections
from collections import namedtuple

import numpy as np
import pytest

import engine
from engine.utils import data as edata
from tests.engine._parity import assert_same_error

Point = namedtuple("Point", ["x", "y"])


def plain(x):
    """Comparable form of a collated batch: tensors as (dtype, shape, values)."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.ndarray):
        return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: plain(v) for k, v in x.items()})
    if isinstance(x, list | tuple):
        return (type(x).__name__, [plain(v) for v in x])
    return x


def samples(lib):
    return [
        [(lib.tensor([1.0, 2.0]), 0), (lib.tensor([3.0, 4.0]), 1)],
        [[lib.tensor(1), 2.5], [lib.tensor(3), 4.5]],
        [{"img": np.zeros((2, 2), np.float32), "label": 3, "name": "a", "w": np.float32(0.5)},
         {"img": np.ones((2, 2), np.float32), "label": 4, "name": "b", "w": np.float32(1.5)}],
        [Point(1, 2.0), Point(3, 4.0)],
        [(True, [1, 2]), (False, [3, 4])],
        [np.arange(3, dtype=np.int32), np.arange(3, 6, dtype=np.int32)],
        [collections.OrderedDict(a=1.0, b=b"x"), collections.OrderedDict(a=2.0, b=b"y")],
        [np.int64(3), np.int64(4)],
    ]


@pytest.mark.parametrize("index", range(8))
def test_default_collate_matches_torch(torch, index):
    from torch.utils.data import default_collate as torch_collate

    assert plain(edata.default_collate(samples(engine)[index])) == plain(torch_collate(samples(torch)[index]))


def test_default_convert_matches_torch(torch):
    from torch.utils.data import default_convert as torch_convert

    for sample in ({"a": np.ones(2), "b": [np.int32(1), "s"]}, (np.zeros(1), 2), Point(np.ones(1), 3)):
        assert plain(edata.default_convert(sample)) == plain(torch_convert(sample))


COLLATE_ERRORS = {
    "unsupported element": lambda lib: [object(), object()],
    "ragged sequences": lambda lib: [[1, 2], [3]],
    "string arrays": lambda lib: [np.array(["a"]), np.array(["b"])],
}


@pytest.mark.parametrize("case", list(COLLATE_ERRORS))
def test_default_collate_errors(case):
    with pytest.raises((TypeError, RuntimeError)):
        edata.default_collate(COLLATE_ERRORS[case](engine))


@pytest.mark.parametrize("case", list(COLLATE_ERRORS))
def test_default_collate_errors_match_torch(torch, case):
    from torch.utils.data import default_collate as torch_collate

    assert_same_error(lambda: edata.default_collate(COLLATE_ERRORS[case](engine)),
                      lambda: torch_collate(COLLATE_ERRORS[case](torch)))


def tensor_data(n=10):
    x = engine.arange(n * 3, dtype=engine.float32).reshape(n, 3)
    y = engine.arange(n)
    return x, y


def test_sequential_batches_drop_last_and_len():
    x, y = tensor_data(10)
    ds = edata.TensorDataset(x, y)
    loader = edata.DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert isinstance(batches[0], list) and batches[0][0].shape == (4, 3) and batches[0][0].dtype == engine.float32
    assert np.array_equal(batches[2][0].numpy(), x.numpy()[8:])
    dropped = edata.DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[1].tolist() for b in dropped] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_tensor_dataset_uses_the_vectorised_path_with_the_same_batches():
    x, y = tensor_data(23)
    ds = edata.TensorDataset(x, y)
    gen_a, gen_b = engine.Generator().manual_seed(7), engine.Generator().manual_seed(7)
    fast = edata.DataLoader(ds, batch_size=5, shuffle=True, generator=gen_a)
    slow = edata.DataLoader(ds, batch_size=5, shuffle=True, generator=gen_b,
                            collate_fn=lambda b: edata.default_collate(b))
    assert iter(fast)._source is not None and iter(slow)._source is None
    for _ in range(2):  # two epochs: the same orders, batch for batch
        for (fx, fy), (sx, sy) in zip(fast, slow, strict=True):
            assert np.array_equal(fx.numpy(), sx.numpy()) and np.array_equal(fy.numpy(), sy.numpy())
            assert fx.dtype == sx.dtype and fy.dtype == sy.dtype


def test_subset_of_tensor_dataset_and_custom_samplers_use_the_vectorised_path():
    x, y = tensor_data(12)
    train, _ = edata.random_split(edata.TensorDataset(x, y), [8, 4], generator=engine.Generator().manual_seed(1))
    loader = edata.DataLoader(train, batch_size=3)
    it = iter(loader)
    assert it._source is not None
    got = [b[1].tolist() for b in it]
    assert got == [[int(train.indices[i]) for i in range(j, min(j + 3, 8))] for j in range(0, 8, 3)]
    nested = edata.Subset(train, [7, 0])
    assert [b[1].tolist() for b in edata.DataLoader(nested, batch_size=2)] == [[train.indices[7], train.indices[0]]]
    custom = edata.DataLoader(edata.TensorDataset(x, y), batch_sampler=[[5, 1], [0]])
    assert iter(custom)._source is not None and [b[1].tolist() for b in custom] == [[5, 1], [0]]


def test_overridden_item_access_falls_back_to_getitem_and_collate():
    x, y = tensor_data(6)

    class Doubled(edata.TensorDataset):
        def __getitem__(self, i):
            a, b = super().__getitem__(i)
            return a * 2, b

    loader = edata.DataLoader(Doubled(x, y), batch_size=4)
    assert iter(loader)._source is None
    first = next(iter(loader))
    assert np.array_equal(first[0].numpy(), x.numpy()[:4] * 2)


def test_shuffle_is_deterministic_with_a_seeded_generator_and_varies_by_epoch_and_seed():
    ds = edata.TensorDataset(engine.arange(50))

    def epoch_orders(seed, epochs=2):
        loader = edata.DataLoader(ds, batch_size=7, shuffle=True, generator=engine.Generator().manual_seed(seed))
        return [[v for b in loader for v in b[0].tolist()] for _ in range(epochs)]

    a, b, c = epoch_orders(0), epoch_orders(0), epoch_orders(1)
    assert a == b and a != c and a[0] != a[1]
    assert sorted(a[0]) == list(range(50)) and sorted(a[1]) == list(range(50))


def test_shuffle_without_a_generator_follows_manual_seed():
    ds = edata.TensorDataset(engine.arange(30))

    def order():
        return [v for b in edata.DataLoader(ds, batch_size=30, shuffle=True) for v in b[0].tolist()]

    engine.manual_seed(3)
    first = order()
    engine.manual_seed(3)
    assert order() == first and first != list(range(30))


class Squares(edata.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.full(2, i, np.float32), "y": i * i, "name": f"s{i}"}


def test_generic_dataset_with_dict_samples():
    batches = list(edata.DataLoader(Squares(5), batch_size=2))
    assert len(batches) == 3
    first = batches[0]
    assert set(first) == {"x", "y", "name"}
    assert first["x"].tolist() == [[0.0, 0.0], [1.0, 1.0]] and first["x"].dtype == engine.float32
    assert first["y"].tolist() == [0, 1] and first["y"].dtype == engine.int64
    assert first["name"] == ["s0", "s1"] and batches[2]["y"].tolist() == [16]


def test_getitems_is_used_when_the_dataset_has_it():
    class Batched(Squares):
        calls = 0

        def __getitems__(self, indices):
            Batched.calls += 1
            return [self[i] for i in indices]

    assert len(list(edata.DataLoader(Batched(6), batch_size=4))) == 2 and Batched.calls == 2


def test_batch_size_none_and_custom_collate():
    no_batch = list(edata.DataLoader(Squares(3), batch_size=None))
    assert len(no_batch) == 3 and no_batch[1]["x"].tolist() == [1.0, 1.0] and no_batch[1]["y"] == 1
    summed = list(edata.DataLoader(Squares(4), batch_size=2, collate_fn=lambda b: sum(s["y"] for s in b)))
    assert summed == [1, 13]


def test_num_workers_runs_in_process_with_the_same_batches():
    x, y = tensor_data(9)
    ds = edata.TensorDataset(x, y)
    base = [b[1].tolist() for b in edata.DataLoader(ds, batch_size=4)]
    workers = edata.DataLoader(ds, batch_size=4, num_workers=2, prefetch_factor=3, persistent_workers=True,
                               pin_memory=True, multiprocessing_context="spawn")
    assert [b[1].tolist() for b in workers] == base and edata.get_worker_info() is None
    assert edata.DataLoader(ds, num_workers=1).prefetch_factor == 2


class Stream(edata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_iterable_dataset_batching():
    assert [b.tolist() for b in edata.DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in edata.DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert len(edata.DataLoader(Stream(7), batch_size=3)) == 3
    assert len(edata.DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert list(edata.DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    chained = Stream(2) + Stream(3)
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5


def test_samplers():
    assert list(edata.SequentialSampler(range(4))) == [0, 1, 2, 3]
    gen = engine.Generator().manual_seed(0)
    rs = edata.RandomSampler(range(5), generator=gen)
    assert sorted(rs) == [0, 1, 2, 3, 4] and len(rs) == 5
    more = list(edata.RandomSampler(range(5), num_samples=12, generator=gen))
    assert len(more) == 12 and sorted(more[:5]) == [0, 1, 2, 3, 4] and sorted(more[5:10]) == [0, 1, 2, 3, 4]
    repl = list(edata.RandomSampler(range(3), replacement=True, num_samples=50, generator=gen))
    assert len(repl) == 50 and set(repl) == {0, 1, 2}
    sub = list(edata.SubsetRandomSampler([10, 20, 30], generator=gen))
    assert sorted(sub) == [10, 20, 30]
    bs = edata.BatchSampler(edata.SequentialSampler(range(10)), batch_size=3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    bs = edata.BatchSampler(iter_only(range(10)), batch_size=3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(bs) == 3
    bs = edata.BatchSampler(iter_only(range(7)), batch_size=3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]]


class iter_only(edata.Sampler):  # noqa: N801 - a user sampler: only __iter__ and __len__
    def __init__(self, r):
        self.r = r

    def __iter__(self):
        return iter(self.r)

    def __len__(self):
        return len(self.r)


def test_loader_with_a_user_sampler():
    loader = edata.DataLoader(Squares(6), batch_size=4, sampler=iter_only([5, 4, 3, 2, 1, 0]))
    assert [b["y"].tolist() for b in loader] == [[25, 16, 9, 4], [1, 0]]


def test_random_split_lengths_fractions_and_determinism(torch):
    ds = edata.TensorDataset(engine.arange(10))
    a = edata.random_split(ds, [0.5, 0.3, 0.2], generator=engine.Generator().manual_seed(4))
    b = edata.random_split(ds, [5, 3, 2], generator=engine.Generator().manual_seed(4))
    assert [s.indices for s in a] == [s.indices for s in b]
    assert sorted(i for s in a for i in s.indices) == list(range(10))
    tds = torch.utils.data.TensorDataset(torch.arange(11))
    for fracs in ([0.5, 0.5], [0.3, 0.3, 0.4], [0.1, 0.9]):
        got = [len(s) for s in edata.random_split(edata.TensorDataset(engine.arange(11)), fracs)]
        assert got == [len(s) for s in torch.utils.data.random_split(tds, fracs)]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        edata.random_split(edata.TensorDataset(engine.arange(3)), [1.0, 0.0])


def test_concat_and_subset_datasets():
    both = Squares(3) + Squares(2)
    assert len(both) == 5 and both[3]["y"] == 0 and both[-1]["y"] == 1 and both[2]["y"] == 4
    sub = edata.Subset(Squares(10), [9, 3])
    assert len(sub) == 2 and sub[0]["y"] == 81 and [s["y"] for s in sub.__getitems__([1, 0])] == [9, 81]
    td = edata.TensorDataset(engine.arange(5) * 2)
    assert edata.Subset(td, [4, 1])[[0, 1]][0].tolist() == [8, 2]


def test_loader_attributes_cannot_be_reassigned():
    loader = edata.DataLoader(Squares(3))
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
            setattr(loader, attr, None)
    loader.collate_fn = list  # other attributes are free


def _subset_override(lib):
    class Custom(lib.utils.data.Subset):
        def __getitem__(self, i):
            return i

    return Custom(list(range(3)), [0])


DATA_ERRORS = {
    "negative workers": lambda lib: lib.utils.data.DataLoader([1], num_workers=-1),
    "negative timeout": lambda lib: lib.utils.data.DataLoader([1], timeout=-1),
    "prefetch without workers": lambda lib: lib.utils.data.DataLoader([1], prefetch_factor=2),
    "negative prefetch": lambda lib: lib.utils.data.DataLoader([1], num_workers=1, prefetch_factor=-1),
    "persistent without workers": lambda lib: lib.utils.data.DataLoader([1], persistent_workers=True),
    "context without workers": lambda lib: lib.utils.data.DataLoader([1], multiprocessing_context="spawn"),
    "sampler and shuffle": lambda lib: lib.utils.data.DataLoader([1, 2], sampler=[0, 1], shuffle=True),
    "batch_sampler and batch_size": lambda lib: lib.utils.data.DataLoader([1, 2], batch_sampler=[[0]], batch_size=2),
    "batch_sampler and drop_last": lambda lib: lib.utils.data.DataLoader([1, 2], batch_sampler=[[0]], drop_last=True),
    "no batching and drop_last": lambda lib: lib.utils.data.DataLoader([1, 2], batch_size=None, drop_last=True),
    "zero batch size": lambda lib: lib.utils.data.DataLoader([1, 2], batch_size=0),
    "bool drop_last": lambda lib: lib.utils.data.BatchSampler([0, 1], 1, drop_last=1),
    "iterable with shuffle": lambda lib: lib.utils.data.DataLoader(_stream(lib), shuffle=True),
    "iterable with sampler": lambda lib: lib.utils.data.DataLoader(_stream(lib), sampler=[0]),
    "iterable with batch_sampler": lambda lib: lib.utils.data.DataLoader(_stream(lib), batch_sampler=[[0]]),
    "random sampler replacement": lambda lib: lib.utils.data.RandomSampler([1], replacement=1),
    "random sampler num_samples": lambda lib: lib.utils.data.RandomSampler([1], num_samples=0),
    "tensor size mismatch": lambda lib: lib.utils.data.TensorDataset(lib.zeros(3), lib.zeros(4)),
    "split sum": lambda lib: lib.utils.data.random_split(range(5), [2, 2]),
    "split fraction": lambda lib: lib.utils.data.random_split(range(5), [1.5, -0.5]),
    "concat empty": lambda lib: lib.utils.data.ConcatDataset([]),
    "concat iterable": lambda lib: lib.utils.data.ConcatDataset([_stream(lib)]),
    "concat index": lambda lib: lib.utils.data.ConcatDataset([[1, 2]])[-3],
    "chain of map-style": lambda lib: list(lib.utils.data.ChainDataset([[1, 2]])),
    "chain len of map-style": lambda lib: len(lib.utils.data.ChainDataset([[1, 2]])),
    "base dataset getitem": lambda lib: lib.utils.data.Dataset()[0],
    "base iterable iter": lambda lib: iter(lib.utils.data.IterableDataset()),
    "subset override without getitems": _subset_override,
}


def _stream(lib):
    class S(lib.utils.data.IterableDataset):
        def __iter__(self):
            return iter([1, 2])

    return S()


@pytest.mark.parametrize("case", list(DATA_ERRORS))
def test_data_errors_raise(case):
    with pytest.raises((ValueError, TypeError, AssertionError, NotImplementedError)):
        DATA_ERRORS[case](engine)


@pytest.mark.parametrize("case", [c for c in DATA_ERRORS if c not in ("base iterable iter",)])
def test_data_errors_match_torch(torch, case):
    import torch.utils.data  # noqa: F401 - torch.utils.data is imported lazily

    assert_same_error(lambda: DATA_ERRORS[case](engine), lambda: DATA_ERRORS[case](torch))
