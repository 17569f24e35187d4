"""The summary (``modscope/views/summary.py``): a row per module call, the input-shape column
(both checked against torchinfo on the same models), column choice, fitting the width, the memory
block and modules with no backward of their own."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import modscope
from modscope.views.report import module_figures
from modscope.views.summary import COLUMNS, SummaryColumnError, SummaryReport, call_rows, parse_columns


def tied(lib):
    """A module used twice (``mid``) and a module never called."""
    nn = lib.nn

    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc, self.mid, self.dec = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 8)
            self.unused = nn.Linear(3, 3)

        def forward(self, x):
            return self.dec(self.mid(self.mid(self.enc(x).relu()).relu()))

    return Tied()


def run(lib, model, x, optimizer=None):
    opt = optimizer(model.parameters()) if optimizer else None
    with modscope.trace(model) as tr:
        model(x).sum().backward()
        if opt is not None:
            opt.step()
    return tr


def text(printable, width: int = 200) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(printable)
    return console.export_text()


def test_a_reused_module_has_a_row_per_call_its_parameters_counted_once(lib):
    model = tied(lib)
    tr = run(lib, model, lib.randn(2, 16))
    _, _, totals, rows = call_rows(tr.events)
    assert [(r.path, r.call, r.depth, r.repeat, r.called) for r in rows] == [
        ("", 0, 0, False, True), ("enc", 0, 1, False, True), ("mid", 0, 1, False, True),
        ("mid", 1, 1, True, True), ("dec", 0, 1, False, True), ("unused", 0, 1, False, False)]
    assert [r.input for r in rows[:5]] == [[2, 16]] * 5 and rows[4].output == [2, 8]
    assert [r.macs for r in rows[:5]] == [2 * 16 * 16 * 3 + 2 * 16 * 8, 512, 512, 512, 256]
    assert totals["params"] == sum(p.numel() for p in model.parameters()) == 272 * 2 + 136 + 12
    out = text(tr.summary(width=200))
    repeat = next(line for line in out.splitlines() if "mid (call 2)" in line)
    assert repeat.count("(repeat)") == 2  # params and trainable
    assert "counted at its first call" in out and "not called" in out


class _Attn:
    """A model calling ``nn.MultiheadAttention`` and an LSTM (tuple outputs, several inputs)."""

    @staticmethod
    def build(torch):
        nn = torch.nn

        class M(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.emb = nn.Embedding(10, 16)
                self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
                self.lstm = nn.LSTM(16, 8, batch_first=True)
                self.cell = nn.Linear(8, 8)

            def forward(self, x):
                a = self.attn(*[self.emb(x)] * 3)[0]
                h = self.lstm(a)[0]
                return self.cell(self.cell(h))

        return M()


def _torchinfo_rows(torch, model, x):
    torchinfo = pytest.importorskip("torchinfo")
    info = torchinfo.summary(model, input_data=x, verbose=0, depth=10)
    return [(layer.depth, layer.input_size, layer.output_size, layer.is_recursive) for layer in info.summary_list]


@pytest.mark.parametrize("build", ["tied", "attention"])
def test_rows_and_input_shapes_match_torchinfo(build):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model, x = (tied(torch), torch.randn(2, 16)) if build == "tied" else (_Attn.build(torch), torch.randint(0, 10, (2, 5)))
    expected = _torchinfo_rows(torch, model, x)
    with modscope.trace(model) as tr:
        out = model(x)
        out.sum().backward()
    rows = [r for r in call_rows(tr.events)[3] if r.called]
    # torchinfo lists the modules it saw called, in call order, a repeat marked "recursive"
    assert [(r.depth, r.input, r.output, r.repeat) for r in rows] == expected


def test_columns_are_chosen_by_name_and_an_unknown_one_is_named():
    assert parse_columns(("params", "Input shape", "OUTPUT")) == ("module", "input", "output", "params")
    assert parse_columns("mult-adds,bwd") == ("module", "mult_adds", "bwd")
    with pytest.raises(SummaryColumnError, match=r"unknown summary column 'flops' \(columns: module, type, input"):
        parse_columns(("params", "flops"))
    import engine
    tr = run(engine, tied(engine), engine.randn(2, 16))
    with pytest.raises(ValueError, match="'flops'"):
        tr.summary(columns=["flops"])
    table = SummaryReport(tr.events, columns=("input", "params")).table()
    assert [c.header for c in table.columns] == ["Module", "Input shape", "Params"]


def test_the_summary_fits_its_width_and_says_what_it_left_out(lib):
    tr = run(lib, tied(lib), lib.randn(2, 16))
    narrow = str(tr.summary())  # not a terminal (pytest captures): 80 columns
    assert max(map(len, narrow.splitlines())) <= 80 and "…" not in narrow
    assert "left out to fit 80 columns: trainable, saved, bwd, fwd" in narrow
    assert "Input shape" in narrow and "Output shape" in narrow and "Params" in narrow
    wide = str(tr.summary(width=200))
    assert all(header in wide for header in COLUMNS.values()) and "left out" not in wide
    assert max(map(len, wide.splitlines())) > 100
    chosen = str(tr.summary(columns=("bwd",)))  # asked for: shown, nothing left out
    assert "Bwd ms" in chosen and "Params" not in chosen and "left out" not in chosen


def _memory(tr) -> dict[str, str]:
    out = text(tr.summary(width=200))
    block = out.split("Memory (estimated)", 1)[1].splitlines()
    rows = {}
    for line in block:
        for what in ("parameters", "buffers", "gradients", "optimizer state", "saved for backward", "total"):
            if line.strip().startswith(what):
                rows.setdefault(what, line.strip()[len(what):].strip())
    return rows


def test_the_memory_block_measures_the_optimizers_state():
    torch = pytest.importorskip("torch")
    model = tied(torch)
    model.enc.requires_grad_(False)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad])
    tr = run(torch, model, torch.randn(2, 16), optimizer=lambda _: opt)
    state = sum(t.nbytes for s in opt.state.values() for t in s.values())
    step = next(e for e in tr.events if e["kind"] == "step")
    assert step["state_bytes"] == state == 2 * 4 * (272 + 136) + 4 * 4  # two moments, four step counters
    memory = _memory(tr)
    params = sum(p.numel() for p in model.parameters())
    assert memory["parameters"].startswith(f"{params * 4 / 1024:.1f} KiB")
    assert memory["gradients"].startswith(f"{(params - 272) * 4 / 1024:.1f} KiB")  # trainable only
    assert memory["optimizer state"].startswith(f"{state / 1024:.1f} KiB") and "measured" in memory["optimizer state"]
    assert memory["total"].endswith("the items above")




def test_an_optimizer_without_state_takes_none(lib):
    tr = run(lib, tied(lib), lib.randn(2, 16), optimizer=lambda p: lib.optim.SGD(p, lr=0.1))  # no momentum
    assert _memory(tr)["optimizer state"].startswith("0 B")
    momentum = run(lib, tied(lib), lib.randn(2, 16), optimizer=lambda p: lib.optim.SGD(p, lr=0.1, momentum=0.9))
    params = sum(e["numel"] for e in next(e for e in momentum.events if e["kind"] == "model")["params"])
    step = next(e for e in momentum.events if e["kind"] == "step")
    assert step["state_bytes"] == (params - 12) * 4  # a momentum buffer per parameter with a gradient (not unused's)


def test_the_memory_block_says_what_it_does_not_know(lib):
    tr = run(lib, tied(lib), lib.randn(2, 16))  # no optimizer
    memory = _memory(tr)
    assert memory["optimizer state"].startswith("unknown") and "no optimizer step" in memory["optimizer state"]
    assert "at least: optimizer state unknown" in memory["total"]
    saved = sum(r.saved for r in call_rows(tr.events)[3] if r.parent is None)
    assert saved > 0 and "graph" in memory["saved for backward"]


def test_modules_whose_inputs_need_no_grad_show_no_backward(lib):
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    tr = run(lib, model, lib.randn(5, 3))
    figs = module_figures(tr.events)
    # the root and the first layer: their hook fires as their output's gradient arrives
    assert [p for p in figs if figs[p]["no_backward"]] == ["", "0"]
    rows = {r.path: r for r in call_rows(tr.events)[3]}
    assert not rows[""].own_backward and rows["2"].own_backward
    out = text(tr.summary(width=200))
    bwd = [line.split("│")[9].strip() for line in out.splitlines() if line.startswith("│")][:4]
    assert bwd[0] == bwd[1] == "—" and bwd[2] not in ("—", "--") and bwd[3] not in ("—", "--")
    assert "no backward of its own" in out
    # an input that needs a gradient: every module has a backward of its own
    x = lib.randn(5, 3).requires_grad_()
    with modscope.trace(model) as tr:
        model(x).sum().backward()
    assert not any(f["no_backward"] for f in module_figures(tr.events).values())
    assert "no backward of its own" not in text(tr.summary(width=200))


def test_the_no_backward_rule_is_torchs():
    """torch runs a full backward hook of a module none of whose inputs needs a gradient with
    ``grad_input`` all None (and warns); the events say the same."""
    torch = pytest.importorskip("torch")
    def build():
        return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))

    model, fired = build(), {}
    for name, m in model.named_modules():
        m.register_full_backward_hook(lambda m, gi, go, n=name: fired.__setitem__(n, all(g is None for g in gi)))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        model(torch.randn(2, 3)).sum().backward()
    tr = run(torch, build(), torch.randn(2, 3))
    figs = module_figures(tr.events)
    assert {p: figs[p]["no_backward"] for p in figs} == fired == {"": True, "1": False, "0": True}


def test_the_html_summary_says_no_backward_too(lib):
    from modscope.views.html.fragments import summary_html

    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    tr = run(lib, model, lib.randn(5, 3))
    html = summary_html(SummaryReport(tr.events))
    rows = html.split("<tbody>")[1].split("</tbody>")[0].split("</tr>")[:-1]
    bwd = [row.split("<td>")[-2].removesuffix("</td>") for row in rows]  # the column before Saved for bwd
    assert bwd[0] == bwd[1] == "—" and bwd[3].replace(".", "").isdigit()
    assert "no backward of its own" in html


def test_saved_for_backward_is_unknown_without_a_graph(lib):
    model = tied(lib)
    with modscope.trace(model, graph=False) as tr:
        model(lib.randn(2, 16)).sum().backward()
    memory = _memory(tr)
    assert memory["saved for backward"].startswith("unknown") and "no autograd graph" in memory["saved for backward"]
    assert "saved for backward" in memory["total"]  # at least: optimizer state, saved for backward unknown
