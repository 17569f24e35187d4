"""The backward observer's walk jumps over the nodes of the calls inside a call
(``capture/backward.py``, ``_Span``): the boundary it finds must be the one a full walk finds, on
models made to trip it (a child's intermediate kept on ``self`` and used by the parent, a child with
two outputs of which the parent uses one, a tensor passed by keyword, chunks of one node, a child's
output updated in place, a module reused, a ``Sequential`` in a ``Sequential``)."""

from __future__ import annotations

import torch
import torch.nn as nn

import modscope
from modscope.capture import backward


class Leak(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        self.saved = h * 3  # used by the parent: a node of this call reached not through its output
        return torch.tanh(h)


class Two(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.lin(x)
        return h.sin(), h.cos()


class Keyword(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, *, other: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * other


class Chunk(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.lin(x).chunk(2, -1)


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.leak, self.two, self.kw, self.chunk = Leak(), Two(), Keyword(), Chunk()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Linear(4, 4))
        self.shared = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.leak(x)
        b = a + self.leak.saved
        c, _ = self.two(b)
        d = self.kw(c, other=x)
        d = d + self.kw(x, other=d)
        e = self.seq(d)
        e.relu_()
        e = e * 1.5
        e += x
        p, q = self.chunk(e)
        return self.shared(self.shared(p) + q) + x


class Root(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.o1, self.o2, self.lin = Outer(), Outer(), nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.o1(x)
        z = self.o2(y) + self.o1(y * 2)
        return self.lin(z), y


def _key(found: list) -> list:
    return sorted((id(node), tuple(hits)) for node, hits in found)


def test_jumping_over_inner_calls_finds_the_full_walks_boundary(monkeypatch, tmp_path) -> None:
    walk = backward._walk
    jumped, mismatched = [], []

    def both(hooked, targets, start, end, label, spans=None, collect=False):
        found, span = walk(hooked, targets, start, end, label, spans, collect)
        full, _ = walk(hooked, targets, start, end, label, None, False)
        if spans:
            jumped.append(True)
        if _key(found) != _key(full):
            mismatched.append((start, end))
        return found, span

    monkeypatch.setattr(backward, "_walk", both)
    torch.manual_seed(0)
    model = Root()
    x = torch.randn(3, 4, requires_grad=True)
    with modscope.trace(model, stats=True) as tr:
        for _ in range(2):
            out, y = model(x)
            (out.sum() + y.sum()).backward()
            model(x)[0].sum().backward(inputs=[x])
    kinds = [e["kind"] for e in tr.events]
    assert "error" not in kinds
    assert kinds.count("backward") > 100
    assert jumped, "no walk used an inner call's span: the test does not exercise the jump"
    assert mismatched == []


def test_a_span_is_made_only_for_a_walk_from_one_node() -> None:
    lin = nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    start = torch._C._autograd._get_sequence_nr()
    h = lin(x)
    a, b = h.sin(), h.cos()
    end = torch._C._autograd._get_sequence_nr()
    edge = torch.autograd.graph.get_gradient_edge(x)
    targets = {(id(edge.node), edge.output_nr): 0}
    found, span = backward._walk([(0, a), (1, b)], targets, start, end, None, None, True)
    assert span is None  # two entries: an outer call reaching one of them must not jump over both
    assert len(found) == 1
    found, span = backward._walk([(0, a)], targets, start, end, None, None, True)
    assert span is not None and span.entry is a.grad_fn
    assert {id(n) for n in span.nodes} == span.ids and a.grad_fn in span.nodes
    assert len(found) == 1 and any(src is found[0][0] for src, _ in span.exits)
