"""``modscope.capture.torch.graph``: torch autograd graphs as ``graph`` events, in the engine's schema.

Each model's forward runs under ``attribute_modules`` so nodes carry their module. The graph is
checked against torch's own ``grad_fn`` graph (walked here independently), against the model's
parameters and modules, and against the engine's event for the same architecture."""

from __future__ import annotations

from collections import Counter, OrderedDict
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

import engine  # noqa: E402
import modscope.capture.torch as capture_torch  # noqa: E402
import modscope.capture.torch.graph as graph_module  # noqa: E402
from modscope.capture.attribution import attribute_modules, walk  # noqa: E402
from modscope.capture.engine.graph import graph_event_fields as engine_graph_event_fields  # noqa: E402
from modscope.capture.torch.graph import graph_event_fields, saved_bytes  # noqa: E402
from modscope.views.diagrams.autograd import build_autograd_graph_from_event  # noqa: E402

nn = torch.nn
F = torch.nn.functional
LEAF_OP = "torch::autograd::AccumulateGrad"  # torch's name() for AccumulateGrad nodes

# Where torch's event and the engine's for the same model legitimately differ. Anything else that
# differs fails ``test_engine_and_torch_agree``.
KNOWN_OP_NAMES = {"AccumulateGrad": LEAF_OP}  # engine op name -> torch's
KNOWN_SAVED_BYTES = {
    # torch saves the pooling's int64 indices (_saved_result1), the engine its float32 output
    # (it finds the maxima again in backward): 4 more bytes per output element in torch.
    "MaxPool2DWithIndicesBackward0": lambda node: 4 * _numel(node["shape"]),
}
KNOWN_SAVED_ORDER = {
    # torch declares mat1 before mat2; the engine saves mat2 (the weight's transpose) first.
    "AddmmBackward0",
}


@pytest.fixture(autouse=True)
def torch_backend(monkeypatch):
    """``attribute_modules`` reads the autograd sequence counter from the torch backend
    (``modscope.capture.torch.BACKEND``). While that backend is still being assembled, stand in
    for it with the counter alone; once it exists, it is what the tests use."""
    if not hasattr(capture_torch, "BACKEND"):
        monkeypatch.setattr(capture_torch, "BACKEND",
                            SimpleNamespace(current_sequence_nr=torch._C._autograd._get_sequence_nr), raising=False)


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# --- models (``fw`` is torch or the engine: the same architecture in either) ------------------------

def mlp(fw):
    return fw.nn.Sequential(fw.nn.Linear(8, 16), fw.nn.ReLU(), fw.nn.Linear(16, 4))


def mnist_net(fw):
    """The classic MNIST CNN (pytorch/examples)."""
    fnn, fF = fw.nn, fw.nn.functional

    class Net(fnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = fnn.Conv2d(1, 10, kernel_size=5)
            self.conv2 = fnn.Conv2d(10, 20, kernel_size=5)
            self.conv2_drop = fnn.Dropout2d()
            self.fc1 = fnn.Linear(320, 50)
            self.fc2 = fnn.Linear(50, 10)

        def forward(self, x):
            x = fF.relu(fF.max_pool2d(self.conv1(x), 2))
            x = fF.relu(fF.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = x.flatten(1)
            x = fF.relu(self.fc1(x))
            x = fF.dropout(x, training=self.training)
            x = self.fc2(x)
            return fF.log_softmax(x, dim=1)

    return Net()


class Residual(nn.Module):
    """torchvision's BasicBlock with a downsample: BatchNorm, ``out += identity``, one in-place ReLU called twice."""

    def __init__(self, cin: int = 4, cout: int = 8, stride: int = 2) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


def residual():
    return nn.Sequential(OrderedDict(stem=nn.Conv2d(3, 4, 3, padding=1), block=Residual()))


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class TwoHeads(nn.Module):
    """Returns a tuple: two heads on one trunk, and a tensor that needs no grad. The trunk's bias is frozen."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Linear(5, 8)
        self.head_a = nn.Linear(8, 2)
        self.head_b = nn.Linear(8, 3)
        self.trunk.bias.requires_grad_(False)

    def forward(self, x):
        h = F.relu(self.trunk(x))
        return self.head_a(h), self.head_b(h), h.detach()


MODELS = {
    "mlp": (lambda: mlp(torch), (3, 8)),
    "mnist": (lambda: mnist_net(torch), (2, 1, 28, 28)),
    "residual": (residual, (2, 3, 8, 8)),
    "lstm": (Recurrent, (2, 5, 4)),
    "tuple": (TwoHeads, (4, 5)),
}


def run(name: str):
    """(model, output tensors, event) for one of ``MODELS``, nodes labelled by module."""
    torch.manual_seed(0)
    build, shape = MODELS[name]
    model = build()
    with attribute_modules(model):
        out = model(torch.randn(*shape))
    outputs = list(out) if isinstance(out, tuple) else [out]
    return model, outputs, graph_event_fields(out if isinstance(out, torch.Tensor) else list(out),
                                              dict(model.named_parameters()))


def reachable(outputs) -> set:
    """Every grad_fn node behind ``outputs``, found without the module under test."""
    found, stack = set(), [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node not in found:
            found.add(node)
            stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return found


def by_module(event: dict, op: str, module: str) -> list[dict]:
    return [n for n in event["nodes"] if n["op"] == op and n["module"] == module]


# --- the graph against torch's own, the model's parameters and modules -------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_graph_matches_torch_graph(name):
    model, outputs, event = run(name)
    nodes = event["nodes"]
    expected = reachable(outputs)
    assert len(nodes) == len(expected)
    assert [n["id"] for n in nodes] == list(range(len(nodes)))

    # Ids are the order of ``walk``: each node is the torch node at that position.
    order = walk([t.grad_fn for t in outputs if t.grad_fn is not None])
    assert set(order) == expected and len(order) == len(expected)
    assert [n["op"] for n in nodes] == [node.name() for node in order]
    index = {node: i for i, node in enumerate(order)}
    for item, node in zip(nodes, order):
        assert item["inputs"] == [None if nxt is None else index[nxt] for nxt, _ in node.next_functions]
        assert item["saved_bytes"] == saved_bytes(node)
        assert item["shape"] == list(node._input_metadata[0].shape)

    # Every edge points from an input node to its consumer, once per input position.
    assert Counter(map(tuple, event["edges"])) == Counter(
        (index[nxt], index[node]) for node in order for nxt, _ in node.next_functions if nxt is not None)
    for j, i in event["edges"]:
        assert j in nodes[i]["inputs"]

    # Parents before children: every node but the outputs' comes after one of its consumers.
    roots = {o["id"] for o in event["outputs"]}
    for item in nodes:
        if item["id"] not in roots:
            assert any(i < item["id"] for j, i in event["edges"] if j == item["id"])

    # Outputs: the node behind each output that requires grad, with its shape.
    assert [o["shape"] for o in event["outputs"]] == [list(t.shape) for t in outputs if t.requires_grad]
    for o, t in zip(event["outputs"], [t for t in outputs if t.requires_grad]):
        assert order[o["id"]] is t.grad_fn
        assert nodes[o["id"]]["shape"] == list(t.shape)


@pytest.mark.parametrize("name", list(MODELS))
def test_leaves_are_the_parameters_and_feed_their_module(name):
    model, _outputs, event = run(name)
    nodes = event["nodes"]
    params = {p: t for p, t in model.named_parameters() if t.requires_grad}
    assert sorted(leaf["path"] for leaf in event["leaves"]) == sorted(params)
    assert len(event["leaves"]) == sum(n["op"] == LEAF_OP for n in nodes)
    for leaf in event["leaves"]:
        node = nodes[leaf["id"]]
        assert node["op"] == LEAF_OP and node["seq"] is None and node["inputs"] == [] and node["module"] is None
        assert leaf["shape"] == node["shape"] == list(params[leaf["path"]].shape)
        owner = leaf["path"].rpartition(".")[0]
        consumers = [n for n in nodes if leaf["id"] in n["inputs"]]
        assert consumers, leaf["path"]
        assert {n["module"] for n in consumers} == {owner}, leaf["path"]


@pytest.mark.parametrize("name", list(MODELS))
def test_seq_follows_the_forward(name):
    _model, _outputs, event = run(name)
    nodes = event["nodes"]
    ops = [n for n in nodes if n["op"] != LEAF_OP]
    assert all(isinstance(n["seq"], int) for n in ops)
    assert len({n["seq"] for n in ops}) == len(ops)
    for j, i in event["edges"]:
        if nodes[j]["seq"] is not None:
            assert nodes[j]["seq"] < nodes[i]["seq"], (nodes[j]["op"], nodes[i]["op"])
    assert all(n["module"] is not None for n in ops)  # every op was made inside some module call


def first_seq(event: dict) -> list[str]:
    """Modules (other than the root) in the order their first op was made."""
    firsts: dict[str, int] = {}
    for n in event["nodes"]:
        if n["seq"] is not None and n["module"]:
            firsts[n["module"]] = min(firsts.get(n["module"], n["seq"]), n["seq"])
    return sorted(firsts, key=firsts.get)


def test_mnist_modules_in_forward_order_and_saved_tensors():
    _model, _outputs, event = run("mnist")
    assert first_seq(event) == ["conv1", "conv2", "conv2_drop", "fc1", "fc2"]
    [addmm] = by_module(event, "AddmmBackward0", "fc1")
    # The input (it needs a gradient, so the weight's transpose is saved too) and the weight's transpose.
    assert [s["shape"] for s in addmm["saved"]] == [[2, 320], [320, 50]]
    assert addmm["saved_bytes"] == (2 * 320 + 320 * 50) * 4
    assert not any(s["output"] for s in addmm["saved"])
    [conv] = by_module(event, "ConvolutionBackward0", "conv1")
    assert conv["saved"] == [{"shape": [2, 1, 28, 28], "output": False, "param": None},
                             {"shape": [10, 1, 5, 5], "output": False, "param": "conv1.weight"}]
    for relu in by_module(event, "ReluBackward0", ""):
        assert relu["saved"] == [{"shape": relu["shape"], "output": True, "param": None}]
    pools = by_module(event, "MaxPool2DWithIndicesBackward0", "")
    assert [[s["output"] for s in p["saved"]] for p in pools] == [[False, True]] * 2
    for p in pools:  # input float32 + indices int64
        assert p["saved_bytes"] == 4 * _numel(p["saved"][0]["shape"]) + 8 * _numel(p["shape"])


def test_mlp_linear_saves_only_the_input_when_the_input_needs_no_grad():
    _model, _outputs, event = run("mlp")
    assert first_seq(event) == ["0", "1", "2"]
    [first] = by_module(event, "AddmmBackward0", "0")
    assert first["saved"] == [{"shape": [3, 8], "output": False, "param": None}]
    assert first["saved_bytes"] == 3 * 8 * 4
    assert first["inputs"][1] is None  # the model's input needs no gradient
    [second] = by_module(event, "AddmmBackward0", "2")
    assert sorted(s["shape"] for s in second["saved"]) == [[3, 16], [16, 4]]


def test_residual_block():
    _model, _outputs, event = run("residual")
    nodes = event["nodes"]
    [add] = by_module(event, "AddBackward0", "block")  # out += identity
    assert sorted(nodes[j]["module"] for j in add["inputs"]) == ["block.bn2", "block.downsample.1"]
    relus = by_module(event, "ReluBackward0", "block.relu")  # one ReLU(inplace=True), called twice
    assert sorted(r["call"] for r in relus) == [0, 1]
    [last] = [r for r in relus if r["call"] == 1]
    assert last["inputs"] == [add["id"]] and event["outputs"] == [{"id": last["id"], "shape": [2, 8, 4, 4]}]
    assert last["saved"] == [{"shape": [2, 8, 4, 4], "output": True, "param": None}]
    # The block's own first op (the add) comes after its children's.
    assert first_seq(event) == ["stem", "block.downsample.0", "block.downsample.1", "block.conv1", "block.bn1",
                                "block.relu", "block.conv2", "block.bn2", "block"]
    for bn in ("block.bn1", "block.bn2", "block.downsample.1"):
        [node] = by_module(event, "NativeBatchNormBackward0", bn)
        params = [s["param"] for s in node["saved"] if s["param"] is not None]
        assert params == [f"{bn}.weight"]


def test_lstm_multi_output_nodes_list_their_shapes():
    _model, _outputs, event = run("lstm")
    multi = [n for n in event["nodes"] if "shapes" in n]
    assert multi  # the fused LSTM layer (or, without mkldnn, the unbind of the input) has several outputs
    for n in multi:
        assert len(n["shapes"]) != 1 and n["shape"] == n["shapes"][0]
    assert {n["module"] for n in multi} == {"lstm"}
    assert first_seq(event) == ["lstm", "head"]


def test_tuple_output():
    _model, outputs, event = run("tuple")
    nodes = event["nodes"]
    assert not outputs[2].requires_grad
    assert [(nodes[o["id"]]["op"], nodes[o["id"]]["module"], o["shape"]) for o in event["outputs"]] == [
        ("AddmmBackward0", "head_a", [4, 2]), ("AddmmBackward0", "head_b", [4, 3])]
    [trunk] = by_module(event, "AddmmBackward0", "trunk")
    assert trunk["inputs"][0] is None  # the frozen bias
    assert "trunk.bias" not in {leaf["path"] for leaf in event["leaves"]}


# --- edge cases ------------------------------------------------------------------------------------

def test_outputs_without_grad_give_the_empty_graph():
    empty = {"nodes": [], "edges": [], "leaves": [], "outputs": []}
    assert graph_event_fields(torch.ones(2), {}) == empty
    assert graph_event_fields([torch.ones(2), torch.zeros(3)], {}) == empty
    model = mlp(torch)
    with torch.no_grad():
        out = model(torch.randn(2, 8))
    assert graph_event_fields(out, dict(model.named_parameters())) == empty


def test_leaf_output_is_its_accumulate_grad():
    w = nn.Parameter(torch.ones(3, 2))
    event = graph_event_fields(w, {"w": w})
    assert event == {
        "nodes": [{"id": 0, "op": LEAF_OP, "module": None, "shape": [3, 2], "saved_bytes": 0, "inputs": [],
                   "seq": None, "call": None, "saved": []}],
        "edges": [], "leaves": [{"id": 0, "path": "w", "shape": [3, 2]}], "outputs": [{"id": 0, "shape": [3, 2]}]}
    # With a consumer of the same leaf as a second output, the leaf is one node reached twice.
    y = w * 2
    event = graph_event_fields((w, y), {"w": w})
    assert [n["op"] for n in event["nodes"]] == [LEAF_OP, "MulBackward0"]
    assert event["outputs"] == [{"id": 0, "shape": [3, 2]}, {"id": 1, "shape": [3, 2]}]
    assert event["edges"] == [[0, 1]]


def test_custom_function_saved_tensors():
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            out = x * w
            ctx.save_for_backward(w, out)
            return out

        @staticmethod
        def backward(ctx, grad):
            w, out = ctx.saved_tensors
            return grad * w, grad * out / w

    w = nn.Parameter(torch.full((4,), 2.0))
    out = Scale.apply(torch.ones(4), w)
    [node] = [n for n in graph_event_fields(out, {"w": w})["nodes"] if n["op"] == "ScaleBackward"]
    assert node["saved"] == [{"shape": [4], "output": False, "param": "w"},
                             {"shape": [4], "output": True, "param": None}]
    assert node["saved_bytes"] == 32


def test_after_backward_nothing_is_saved():
    model = mnist_net(torch)
    out = model(torch.randn(2, 1, 28, 28))
    before = graph_event_fields(out, dict(model.named_parameters()))
    out.sum().backward()
    after = graph_event_fields(out, dict(model.named_parameters()))
    assert [n["op"] for n in after["nodes"]] == [n["op"] for n in before["nodes"]]
    assert any(n["saved_bytes"] for n in before["nodes"])
    assert all(n["saved_bytes"] == 0 and n["saved"] == [] for n in after["nodes"])


# --- which saved attributes are read: learned per node class ---------------------------------------

def _fresh_kinds(monkeypatch) -> dict:
    """An empty per-class cache for the test (what a new process starts with)."""
    kinds: dict = {}
    monkeypatch.setattr(graph_module, "_kinds", kinds)
    return kinds


def test_attributes_that_never_hold_tensors_are_no_longer_read(monkeypatch):
    kinds = _fresh_kinds(monkeypatch)
    conv = nn.Conv2d(3, 4, 3)
    out = conv(torch.randn(2, 3, 6, 6))
    event = graph_event_fields(out, dict(conv.named_parameters()))
    kind = kinds[type(out.grad_fn)]
    # the ints, bools and int lists (stride, padding, groups, the bias's sizes) are dropped
    assert [name for name, *_ in kind.saved_attrs] == ["_saved_input", "_saved_weight"]
    [node] = [n for n in event["nodes"] if n["op"] == "ConvolutionBackward0"]
    assert node["saved"] == [{"shape": [2, 3, 6, 6], "output": False, "param": None},
                             {"shape": [4, 3, 3, 3], "output": False, "param": "weight"}]
    # the next graph of that class, read through the shorter list, is the event a fresh cache gives
    out = conv(torch.randn(2, 3, 6, 6))
    learned = graph_event_fields(out, dict(conv.named_parameters()))
    kinds.clear()
    assert graph_event_fields(out, dict(conv.named_parameters())) == learned
    assert [n["saved"] for n in learned["nodes"]] == [n["saved"] for n in event["nodes"]]


def test_an_optional_tensor_seen_as_none_is_still_read_when_present(monkeypatch):
    """LayerNorm without affine saves ``None`` for its weight and bias: the attributes stay, and
    the affine LayerNorm's event (same node class) lists them, as a fresh cache does."""
    kinds = _fresh_kinds(monkeypatch)
    x = torch.randn(2, 5, requires_grad=True)
    plain = nn.LayerNorm(5, elementwise_affine=False)
    plain_out = plain(x)
    graph_event_fields(plain_out, {})
    attrs = [name for name, *_ in kinds[type(plain_out.grad_fn)].saved_attrs]
    assert "_saved_weight" in attrs and "_saved_bias" in attrs
    affine = nn.LayerNorm(5)
    out = affine(x)
    event = graph_event_fields(out, dict(affine.named_parameters()))
    kinds.clear()
    assert graph_event_fields(out, dict(affine.named_parameters())) == event
    [node] = [n for n in event["nodes"] if n["op"] == "NativeLayerNormBackward0"]
    assert {"shape": [5], "output": False, "param": "weight"} in node["saved"]


def test_a_class_first_seen_after_backward_keeps_its_tensor_attributes(monkeypatch):
    """Backward frees the saved tensors (``None`` or an error on reading): nothing is learned
    from that, and a later graph of the class lists its tensors."""
    kinds = _fresh_kinds(monkeypatch)
    assert not kinds
    lin = nn.Linear(3, 2)
    out = lin(torch.randn(4, 3, requires_grad=True))
    out.sum().backward()
    graph_event_fields(out, dict(lin.named_parameters()))
    out = lin(torch.randn(4, 3, requires_grad=True))
    event = graph_event_fields(out, dict(lin.named_parameters()))
    [node] = [n for n in event["nodes"] if n["op"] == "AddmmBackward0"]
    assert [s["shape"] for s in node["saved"]] == [[4, 3], [3, 2]]
    assert node["saved_bytes"] == (12 + 6) * 4


def test_a_saved_sparse_tensor_counts_its_dense_size():
    """Sparse tensors have no ``nbytes``: their bytes are ``numel() * element_size()``, as a
    dense tensor's are."""

    class KeepSparse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, mask):
            ctx.save_for_backward(mask)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    mask = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 3))
    out = KeepSparse.apply(torch.randn(2, 3, requires_grad=True), mask)
    [node] = [n for n in graph_event_fields(out, {})["nodes"] if n["op"] == "KeepSparseBackward"]
    assert node["saved"] == [{"shape": [2, 3], "output": False, "param": None}]
    assert node["saved_bytes"] == saved_bytes(out.grad_fn) == 6 * 4


# --- torch against the engine ----------------------------------------------------------------------

def both(build, shape) -> tuple[dict, dict, list[str]]:
    """The engine's and torch's events for the same architecture, and torch's parameter paths."""
    events = []
    for fw in (engine, torch):
        fw.manual_seed(0)
        model = build(fw)
        with attribute_modules(model):
            out = model(fw.randn(*shape))
        convert = engine_graph_event_fields if fw is engine else graph_event_fields
        events.append(convert(out, dict(model.named_parameters())))
    return events[0], events[1], [p for p, _ in model.named_parameters()]


def op_name(op: str) -> str:
    return KNOWN_OP_NAMES.get(op, op)


def describe(event: dict, engine_names: bool) -> dict:
    """Framework-neutral views of an event, op names in torch's spelling."""
    nodes = event["nodes"]
    name = op_name if engine_names else (lambda op: op)

    def saved(n):
        entries = [(tuple(s["shape"]), s["output"], s["param"]) for s in n["saved"]]
        return tuple(sorted(entries)) if n["op"] in KNOWN_SAVED_ORDER else tuple(entries)

    return {
        "ops": Counter(name(n["op"]) for n in nodes),
        "labelled": Counter((name(n["op"]), n["module"], n["call"], tuple(n["shape"])) for n in nodes),
        "inputs": Counter((name(n["op"]), n["module"], tuple(None if j is None else name(nodes[j]["op"])
                                                             for j in n["inputs"])) for n in nodes),
        "forward": [(name(n["op"]), n["module"]) for n in sorted(nodes, key=lambda n: (n["seq"] is None, n["seq"] or 0))
                    if n["seq"] is not None],
        "saved": Counter((name(n["op"]), n["module"], saved(n)) for n in nodes),
        "leaves": sorted((leaf["path"], tuple(leaf["shape"])) for leaf in event["leaves"]),
        "outputs": [(name(nodes[o["id"]]["op"]), o["shape"]) for o in event["outputs"]],
        "edges": len(event["edges"]),
    }


@pytest.mark.parametrize("build, shape", [(mlp, (3, 8)), (mnist_net, (2, 1, 28, 28))], ids=["mlp", "mnist"])
def test_engine_and_torch_agree(build, shape):
    engine_event, torch_event, paths = both(build, shape)
    ours, theirs = describe(engine_event, True), describe(torch_event, False)
    for key in ours:
        assert ours[key] == theirs[key], key
    assert sorted(path for path, _ in ours["leaves"]) == sorted(paths)
    # The engine names leaves AccumulateGrad, torch torch::autograd::AccumulateGrad: nothing else is renamed.
    engine_ops = {n["op"] for n in engine_event["nodes"]}
    assert {op for op in engine_ops if op_name(op) != op} == set(KNOWN_OP_NAMES)

    # saved_bytes agree but for the known differences, which are as explained.
    engine_bytes = Counter((op_name(n["op"]), n["module"], tuple(n["shape"]), n["saved_bytes"])
                           for n in engine_event["nodes"] if n["op"] not in KNOWN_SAVED_BYTES)
    torch_bytes = Counter((n["op"], n["module"], tuple(n["shape"]), n["saved_bytes"])
                          for n in torch_event["nodes"] if n["op"] not in KNOWN_SAVED_BYTES)
    assert engine_bytes == torch_bytes
    for op, extra in KNOWN_SAVED_BYTES.items():
        ours_ = sorted((tuple(n["shape"]), n["saved_bytes"] + extra(n)) for n in engine_event["nodes"] if n["op"] == op)
        theirs_ = sorted((tuple(n["shape"]), n["saved_bytes"]) for n in torch_event["nodes"] if n["op"] == op)
        assert ours_ == theirs_, op


# --- drawing ---------------------------------------------------------------------------------------

def test_mnist_event_draws_with_module_clusters_and_parameter_names():
    model, _outputs, event = run("mnist")
    model_event = {"model": "Net", "modules": [{"path": p, "cls": type(m).__name__} for p, m in model.named_modules()]}
    source = build_autograd_graph_from_event(event, model_event).to_digraph().source
    assert source.startswith("digraph Net {")
    for cluster in ("conv1 (Conv2d)", "conv2 (Conv2d)", "conv2_drop (Dropout2d)", "fc1 (Linear)", "fc2 (Linear)"):
        assert f'label="{cluster}"' in source
    for path, _ in model.named_parameters():
        assert f'label="{path}\\n' in source
    assert LEAF_OP not in source  # leaves are drawn as their parameters
    assert source.count("ConvolutionBackward0") == 2 and source.count("AddmmBackward0") == 2
    collapsed = build_autograd_graph_from_event(event, model_event, depth=1).to_digraph().source
    assert 'label="fc1\\nLinear\\n2 ops, 2 params"' in collapsed


def test_tensors_packed_by_saved_tensors_hooks_are_left_out_without_unpacking():
    """Unpacking runs the user's hook (checkpoint recomputes, save_on_cpu copies back): the
    graph event leaves those tensors out and never calls it; tensors saved outside still count."""
    unpacked = []
    lin, head = torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(1) or t):
        hidden = torch.tanh(lin(torch.randn(5, 4)))
    out = head(hidden)
    params = {**{f"lin.{k}": v for k, v in lin.named_parameters()}, **{f"head.{k}": v for k, v in head.named_parameters()}}
    nodes = {n["op"]: n for n in graph_event_fields(out, params)["nodes"]}
    assert unpacked == []
    assert nodes["TanhBackward0"]["saved"] == [] and nodes["TanhBackward0"]["saved_bytes"] == 0
    addmms = sorted((n for n in graph_event_fields(out, params)["nodes"] if n["op"] == "AddmmBackward0"),
                    key=lambda n: n["seq"])
    assert [bool(n["saved"]) for n in addmms] == [False, True]  # lin's packed, head's kept
    out.sum().backward()
    assert len(unpacked) >= 2  # backward itself unpacks them
