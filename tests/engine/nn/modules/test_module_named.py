"""Names and order of every ``named_*`` walk, with shared modules and tensors, against torch."""

from __future__ import annotations

import pytest


def _model(lib):
    """A tree with a module registered twice, a parameter shared by two modules, buffers
    (one non-persistent, one None), a None child and a None parameter."""
    nn = lib.nn
    shared = nn.Linear(2, 2)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = shared
            self.act = nn.Identity()
            self.again = shared                  # the same module under a second name
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.register_buffer("nothing", None)
            self.register_parameter("unused", None)
            self.gap = None

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(lib.ones(1))
            self.block = Block()
            self.head = nn.Linear(2, 1)
            self.tied = nn.Linear(2, 2)
            self.tied.weight = shared.weight     # a parameter shared across modules
            self.tail = nn.Sequential(shared, nn.ModuleList([nn.Identity(), self.head]))

    return Net()


def _names(pairs):
    return [name for name, _ in pairs]


WALKS = {
    "named_modules": lambda m: [(n, type(x).__name__) for n, x in m.named_modules()],
    "named_modules_dups": lambda m: [(n, type(x).__name__) for n, x in m.named_modules(remove_duplicate=False)],
    "named_modules_prefix": lambda m: _names(m.named_modules(prefix="root")),
    "named_modules_memo": lambda m: _names(m.named_modules(memo={m.head})),
    "modules": lambda m: [type(x).__name__ for x in m.modules()],
    "modules_dups": lambda m: [type(x).__name__ for x in m.modules(remove_duplicate=False)],
    "named_children": lambda m: _names(m.named_children()),
    "block_children": lambda m: _names(m.block.named_children()),
    "children": lambda m: [type(x).__name__ for x in m.children()],
    "named_parameters": lambda m: _names(m.named_parameters()),
    "named_parameters_dups": lambda m: _names(m.named_parameters(remove_duplicate=False)),
    "named_parameters_prefix": lambda m: _names(m.named_parameters(prefix="model")),
    "named_parameters_norecurse": lambda m: _names(m.named_parameters(recurse=False)),
    "parameters_count": lambda m: [tuple(p.shape) for p in m.parameters()],
    "named_buffers": lambda m: _names(m.named_buffers()),
    "named_buffers_dups": lambda m: _names(m.named_buffers(remove_duplicate=False)),
    "named_buffers_norecurse": lambda m: _names(m.block.named_buffers(recurse=False, prefix="b")),
    "buffers": lambda m: [tuple(b.shape) for b in m.buffers()],
    "state_dict_keys": lambda m: list(m.state_dict().keys()),
    "metadata_keys": lambda m: list(m.state_dict()._metadata.items()),
    "get_submodule": lambda m: [type(m.get_submodule(p)).__name__ for p in ("", "block.again", "tail.1.1")],
    "get_parameter": lambda m: [tuple(m.get_parameter(p).shape) for p in ("scale", "tail.0.bias", "tied.weight")],
    "get_buffer": lambda m: [tuple(m.get_buffer(p).shape) for p in ("block.count", "block.scratch")],
}


@pytest.mark.parametrize("name", sorted(WALKS))
def test_walks_match_torch(both, name):
    e, t = both(lambda lib: WALKS[name](_model(lib)))
    assert e == t
    assert e


def test_duplicates_really_differ(both):
    """The model has real sharing: the de-duplicated walks are shorter than the full ones."""
    e, _ = both(lambda lib: (len(WALKS["named_parameters"](_model(lib))),
                             len(WALKS["named_parameters_dups"](_model(lib))),
                             len(WALKS["named_modules"](_model(lib))),
                             len(WALKS["named_modules_dups"](_model(lib)))))
    assert e[0] < e[1] and e[2] < e[3]


def test_set_submodule(both):
    def case(lib):
        m = _model(lib)
        m.set_submodule("block.act", lib.nn.Linear(2, 2))
        m.set_submodule("block.new", lib.nn.Identity())
        m.set_submodule("head", lib.nn.Identity(), strict=True)
        return _names(m.named_modules())

    e, t = both(case)
    assert e == t
