"""Random module trees, built alike for the engine and for torch: nesting, reuse, sharing, residual
adds, branches, tuple and dict outputs, modules with two tensor inputs and an int between them,
keyword arguments, detached inputs, calls under ``no_grad``, outputs nobody uses and outputs
updated in place (which torch refuses under full backward hooks). The parity tests run them under hooks in both libraries and
compare what fires, in which order, and the gradients.

A tree is plain data (``random_spec``), so a failing seed can be printed and rebuilt."""

from __future__ import annotations

import random
from typing import Any

from tests.modscope.models import record_hooks, watch_hooks

WIDTH = 4
LEAVES = ("linear", "relu", "tanh")
COMPOSITES = ("seq", "res", "reuse", "branch", "tuple", "two_inputs", "detach", "no_grad", "unused", "shared",
              "kwargs", "dict_out", "in_place")


def random_spec(seed: int, depth: int = 4) -> Any:
    """A random tree: tuples ``(kind, *children or arguments)``; the root is never a leaf."""
    rng = random.Random(seed)
    return _spec(rng, depth, root=True)


def _spec(rng: random.Random, depth: int, root: bool = False) -> Any:
    if depth == 0 or (not root and rng.random() < 0.3):
        return (rng.choice(LEAVES),)
    kind = rng.choice(COMPOSITES)
    if kind == "seq":
        return ("seq", *[_spec(rng, depth - 1) for _ in range(rng.randint(1, 3))])
    if kind == "reuse":
        return ("reuse", _spec(rng, depth - 1), rng.randint(2, 3))
    if kind == "branch":
        return ("branch", _spec(rng, depth - 1), _spec(rng, depth - 1), rng.choice(("add", "mul")))
    if kind == "shared":
        return ("shared", _spec(rng, depth - 1))
    return (kind, _spec(rng, depth - 1))


def build(lib: Any, spec: Any) -> Any:
    """The module tree of ``spec`` for ``lib`` (``engine`` or ``torch``)."""
    nn = lib.nn

    class Residual(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x) + x

    class Reuse(nn.Module):
        def __init__(self, inner, times):
            super().__init__()
            self.inner, self.times = inner, times

        def forward(self, x):
            for _ in range(self.times):
                x = self.inner(x)
            return x

    class Branch(nn.Module):
        def __init__(self, left, right, how):
            super().__init__()
            self.left, self.right, self.how = left, right, how

        def forward(self, x):
            a, b = self.left(x), self.right(x)
            return a + b if self.how == "add" else a * b

    class Pair(nn.Module):  # returns a tuple: its hooks see two outputs
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x), x * 2.0

    class UsePair(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.pair = Pair(inner)

        def forward(self, x):
            a, b = self.pair(x)
            return a - b

    class TwoInputs(nn.Module):  # two tensor inputs and an int: its hooks see (grad, None, grad)
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x, k, y):
            return self.inner(x) + y * k

    class CallTwoInputs(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.two = TwoInputs(inner)

        def forward(self, x):
            return self.two(x, 3, x * 0.5)

    class Scale(nn.Module):  # called with a keyword argument, which hooks do not see
        def forward(self, x, scale=1.0):
            return x * scale

    class CallWithKeyword(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner, self.scale = inner, Scale()

        def forward(self, x):
            return self.scale(self.inner(x), scale=0.5)

    class DictOut(nn.Module):  # a dict output: torch wires no backward hooks for it (and warns)
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return {"y": self.inner(x)}

    class UseDict(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.d = DictOut(inner)

        def forward(self, x):
            return self.d(x)["y"] + 1.0

    class InPlace(nn.Module):  # updates its inner module's output in place (or, if not, as a copy)
        def __init__(self, inner, in_place=True):
            super().__init__()
            self.inner, self.in_place = inner, in_place

        def forward(self, x):
            y = self.inner(x)
            return y.mul_(2.0) if self.in_place else y * 2.0

    class Detached(nn.Module):  # the inner module's input requires no grad
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x.detach()) + x

    class NoGrad(nn.Module):  # the inner module runs without a graph
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            with lib.no_grad():
                y = self.inner(x)
            return x + y

    class Unused(nn.Module):  # the inner module's output never reaches the loss
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            self.inner(x)
            return x * 1.5

    class Shared(nn.Module):  # one module under two names, called through both
        def __init__(self, inner):
            super().__init__()
            self.first = inner
            self.second = inner

        def forward(self, x):
            return self.second(self.first(x))

    def make(s: Any) -> Any:
        kind, args = s[0], s[1:]
        if kind == "linear":
            return nn.Linear(WIDTH, WIDTH)
        if kind == "relu":
            return nn.ReLU()
        if kind == "tanh":
            return nn.Tanh()
        if kind == "seq":
            return nn.Sequential(*[make(a) for a in args])
        if kind == "reuse":
            return Reuse(make(args[0]), args[1])
        if kind == "branch":
            return Branch(make(args[0]), make(args[1]), args[2])
        if kind == "in_place":
            return InPlace(make(args[0]), *args[1:])
        wrapper = {"res": Residual, "tuple": UsePair, "two_inputs": CallTwoInputs, "detach": Detached,
                   "no_grad": NoGrad, "unused": Unused, "shared": Shared, "kwargs": CallWithKeyword,
                   "dict_out": UseDict}[kind]
        return wrapper(make(args[0]))

    return make(spec)


def copy_weights(src: Any, dst: Any, lib_dst: Any) -> None:
    """``dst``'s parameters set to ``src``'s values (same tree, another library)."""
    values = {name: p.detach().numpy().copy() for name, p in src.named_parameters()}
    with lib_dst.no_grad():
        for name, p in dst.named_parameters():
            p.copy_(lib_dst.tensor(values[name]))


def without_in_place(spec: Any) -> Any:
    """``spec`` with every in-place update made a copy instead (same tree, same paths)."""
    args = tuple(without_in_place(a) if isinstance(a, tuple) else a for a in spec[1:])
    return ("in_place", args[0], False) if spec[0] == "in_place" else (spec[0], *args)


def record_all_hooks(lib: Any, model: Any) -> tuple[list[tuple[str, str]], list[Any]]:
    """``record_hooks`` plus the four global module hooks and a tensor hook on every module
    output that requires grad (registered by a forward hook, so it lands on each call's output),
    all appending to one list; and the global hooks' handles, which the caller must remove."""
    order = record_hooks(model)
    names = {id(m): n for n, m in model.named_modules()}
    mod = lib.nn.modules.module

    def on_output(m, args, out):
        outs = out if isinstance(out, tuple) else (out,)
        name = names[id(m)]
        for i, o in enumerate(outs):
            if isinstance(o, lib.Tensor) and o.requires_grad:
                o.register_hook(lambda g, name=name, i=i: order.append((f"tensor{i}", name)))

    for _, m in model.named_modules():
        m.register_forward_hook(on_output)
    handles = [
        mod.register_module_forward_pre_hook(lambda m, a: order.append(("global_forward_pre", names.get(id(m))))),
        mod.register_module_forward_hook(lambda m, a, o: order.append(("global_forward", names.get(id(m))))),
        mod.register_module_full_backward_pre_hook(
            lambda m, g: order.append(("global_backward_pre", names.get(id(m))))),
        mod.register_module_full_backward_hook(
            lambda m, gi, go: order.append(("global_backward", names.get(id(m))))),
    ]
    return order, handles


def record_hook_values(model: Any) -> list[tuple]:
    """What each module hook receives, by shape: ``(kind, path, shapes, ...)``, one ``shapes``
    per value the hook gets, ``None`` where a position holds no tensor (a non-tensor argument, a
    gradient that did not arrive)."""
    seen: list[tuple] = []

    def shapes(values: Any) -> tuple:
        values = values if isinstance(values, tuple) else (values,)
        return tuple(tuple(v.shape) if hasattr(v, "shape") else None for v in values)

    watch_hooks(model, lambda kind, name, values: seen.append((kind, name, *map(shapes, values))))
    return seen


def record_random_hooks(lib: Any, model: Any, seed: int) -> list[tuple[str, str, int]]:
    """Hooks drawn at random per module (``seed``): one or two of each kind, some prepended,
    with keyword arguments or ``always_call``, and some that replace what they receive (inputs
    scaled by 1.5, outputs by 1.25, gradients by 0.5 or 2); each appends ``(kind, path, k)``."""
    rng = random.Random(seed)
    order: list[tuple[str, str, int]] = []

    def scaled(values: Any, factor: float) -> Any:
        return tuple(v * factor if isinstance(v, lib.Tensor) else v for v in values)

    for name, mod in model.named_modules():
        for k in range(rng.randint(1, 2)):
            prepend, replace = rng.random() < 0.3, rng.random() < 0.3

            def pre(m, args, *kwargs, name=name, k=k, replace=replace):  # kwargs: with_kwargs only
                order.append(("forward_pre", name, k))
                if not replace:
                    return None
                return (scaled(args, 1.5), *kwargs) if kwargs else scaled(args, 1.5)
            mod.register_forward_pre_hook(pre, prepend=prepend, with_kwargs=rng.random() < 0.5)

            def fwd(m, args, out, name=name, k=k, replace=replace):
                order.append(("forward", name, k))
                if replace and isinstance(out, lib.Tensor):
                    return out * 1.25
                return scaled(out, 1.25) if replace and isinstance(out, tuple) else None
            mod.register_forward_hook(fwd, prepend=rng.random() < 0.3, always_call=rng.random() < 0.5)

            def bpre(m, grad_output, name=name, k=k, replace=replace):
                order.append(("backward_pre", name, k))
                return scaled(grad_output, 0.5) if replace else None
            mod.register_full_backward_pre_hook(bpre, prepend=prepend)

            def bwd(m, grad_input, grad_output, name=name, k=k, replace=replace):
                order.append(("backward", name, k))
                return scaled(grad_input, 2.0) if replace else None
            mod.register_full_backward_hook(bwd, prepend=rng.random() < 0.3)
    return order


def record_event_shapes(lib: Any, model: Any) -> list[tuple[str, str, list]]:
    """What a trace's module events summarise, taken from plain hooks: ``(kind, path, shapes)``
    with the inputs (forward_pre), outputs (forward), gradients of the outputs (backward_pre) or
    of the inputs (backward), their leaves flattened as the tracer flattens them, ``None`` for a
    leaf that is not a tensor."""
    seen: list[tuple[str, str, list]] = []

    def shapes(value: Any) -> list:
        if isinstance(value, tuple | list):
            return [s for v in value for s in shapes(v)]
        if isinstance(value, dict):
            return [s for v in value.values() for s in shapes(v)]
        return [list(value.shape) if isinstance(value, lib.Tensor) else None]

    # the values a trace summarises: the forward's output, the backward's grad_input, else the first
    watch_hooks(model, lambda kind, name, values: seen.append((kind, name, shapes(values[kind == "forward"]))))
    return seen
