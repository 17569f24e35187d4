"""Running one case on engine and on torch with the same weights and inputs, and comparing
outputs, input gradients and parameter gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import engine


def copy_params(dst: Any, src: Any) -> None:
    """Give engine module ``dst`` the parameter values of torch module ``src``; the names (and
    their order) must be torch's."""
    dst_named, src_named = list(dst.named_parameters()), list(src.named_parameters())
    assert [n for n, _ in dst_named] == [n for n, _ in src_named]
    with engine.no_grad():
        for (_, d), (_, s) in zip(dst_named, src_named):
            assert tuple(d.shape) == tuple(s.shape)
            d.copy_(engine.tensor(s.detach().numpy()))


def to_lib(lib: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    """Float arrays become leaves that require grad, other arrays plain tensors."""
    out = {}
    for name, a in arrays.items():
        if isinstance(a, np.ndarray):
            out[name] = lib.tensor(a, requires_grad=a.dtype.kind == "f")
        else:
            out[name] = a
    return out


def flat(x: Any) -> list[Any]:
    """The tensors of a (nested) output, in order; None entries are kept as None."""
    if isinstance(x, tuple | list):
        return [t for item in x for t in flat(item)]
    return [x]


def numpy(t: Any) -> np.ndarray | None:
    return None if t is None else t.detach().numpy()


def run_case(lib: Any, module: Any, inputs: dict[str, Any], call: Callable, weights: list[np.ndarray] | None,
             backward: bool) -> dict[str, Any]:
    tensors = to_lib(lib, inputs)
    if backward:
        outs = flat(call(module, tensors))
    else:  # without autograd (where torch takes its fused fast paths)
        with lib.no_grad():
            outs = flat(call(module, tensors))
    result: dict[str, Any] = {"out": [numpy(o) for o in outs], "shapes": [None if o is None else tuple(o.shape)
                                                                       for o in outs]}
    if backward:
        rng = np.random.default_rng(7)
        weights = weights or [None if o is None else rng.standard_normal(o.shape).astype(np.float32) for o in outs]
        total = sum((o * lib.tensor(w, dtype=o.dtype)).sum() for o, w in zip(outs, weights) if o is not None)
        total.backward()
        result["grad_inputs"] = {k: numpy(t.grad) for k, t in tensors.items()
                                 if hasattr(t, "grad") and t.requires_grad}
        result["grad_params"] = {k: numpy(p.grad) for k, p in module.named_parameters()}
    return result


def check_parity(torch: Any, make: Callable[[Any], Any], inputs: dict[str, Any], call: Callable,
                 backward: bool = True, train: bool = False, atol: float = 2e-5, rtol: float = 1e-4) -> None:
    """Build the module on both libraries (torch's weights copied into engine's), run ``call``
    on the same inputs and compare every output, and after ``backward`` of a fixed random
    weighting of the outputs, the gradient of every input and parameter. Without ``backward``
    the call runs under ``no_grad``."""
    torch.manual_seed(0)
    t_mod = make(torch)
    e_mod = make(engine)
    copy_params(e_mod, t_mod)
    t_mod.train(train)
    e_mod.train(train)
    expected = run_case(torch, t_mod, inputs, call, None, backward)
    got = run_case(engine, e_mod, inputs, call, None, backward)
    assert got["shapes"] == expected["shapes"]
    for k, (g, e) in enumerate(zip(got["out"], expected["out"])):
        if e is None:
            assert g is None, f"output {k}"
        else:
            assert g.dtype == e.dtype, f"output {k}"
            np.testing.assert_allclose(g, e, atol=atol, rtol=rtol, equal_nan=True, err_msg=f"output {k}")
    if not backward:
        return
    for kind in ("grad_inputs", "grad_params"):
        assert got[kind].keys() == expected[kind].keys()
        for name, e in expected[kind].items():
            g = got[kind][name]
            if e is None:
                assert g is None, f"{kind} {name}"
            else:
                np.testing.assert_allclose(g, e, atol=atol, rtol=rtol, err_msg=f"{kind} {name}")


def outcome(fn: Callable[[], Any]) -> tuple[str, str] | None:
    """(exception type, message with torch's names as engine's) or None when ``fn`` returns."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is the result under test
        return type(e).__name__, str(e).replace("torch.", "engine.")
    return None


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
