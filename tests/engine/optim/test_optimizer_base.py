"""The Optimizer base: construction errors, param groups, zero_grad, state_dict format and
load_state_dict, repr — each checked against torch's behaviour and messages."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import engine
import engine.optim as eoptim
from tests.engine._parity import assert_same_error, error_of


def leaf(lib, n=2):
    return lib.zeros(n, requires_grad=True)


# each case builds the failing call for a library (engine or torch); the type is what engine must raise
ERROR_CASES = {
    "empty parameter list": (ValueError, lambda lib: lib.optim.SGD([], lr=0.1)),
    "params is a tensor": (TypeError, lambda lib: lib.optim.SGD(leaf(lib), lr=0.1)),
    "group params is a set": (TypeError, lambda lib: lib.optim.SGD([{"params": {leaf(lib)}}], lr=0.1)),
    "non-tensor param": (TypeError, lambda lib: lib.optim.SGD([leaf(lib), 3], lr=0.1)),
    "non-leaf param": (ValueError, lambda lib: lib.optim.SGD([leaf(lib) * 2], lr=0.1)),
    "param in two groups": (ValueError, lambda lib: (lambda p: lib.optim.SGD([{"params": [p]}, {"params": [p]}],
                                                                           lr=0.1))(leaf(lib))),
    "param_group not a dict": (TypeError, lambda lib: lib.optim.SGD([leaf(lib)], lr=0.1).add_param_group([leaf(lib)])),
    "names for some params only": (ValueError, lambda lib: lib.optim.SGD([("a", leaf(lib)), leaf(lib)], lr=0.1)),
    "group without names": (ValueError, lambda lib: lib.optim.SGD([("a", leaf(lib))], lr=0.1).add_param_group(
        {"params": [leaf(lib)]})),
    "required option missing": (ValueError, lambda lib: _Required(lib, [leaf(lib)])),
    "load: group count": (ValueError, lambda lib: lib.optim.SGD([leaf(lib)], lr=0.1).load_state_dict(
        lib.optim.SGD([{"params": [leaf(lib)]}, {"params": [leaf(lib)]}], lr=0.1).state_dict())),
    "load: group size": (ValueError, lambda lib: lib.optim.SGD([leaf(lib)], lr=0.1).load_state_dict(
        lib.optim.SGD([leaf(lib), leaf(lib)], lr=0.1).state_dict())),
    "base step": (NotImplementedError, lambda lib: lib.optim.Optimizer([leaf(lib)], {}).step()),
    "pre hook returns junk": (RuntimeError, lambda lib: _junk_pre_hook(lib)),
}


def _Required(lib, params):  # noqa: N802 - builds an optimizer class with a required option
    class Needs(lib.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": importlib.import_module(lib.__name__ + ".optim.optimizer").required})

        def step(self, closure=None):
            return None

    return Needs(params)


def _junk_pre_hook(lib):
    p = leaf(lib)
    p.grad = lib.ones(2)
    opt = lib.optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: "junk")
    opt.step()


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_error_paths_raise(case):
    kind, fn = ERROR_CASES[case]
    with pytest.raises(kind):
        fn(engine)


@pytest.mark.parametrize("case", [c for c in ERROR_CASES if c != "pre hook returns junk"])
def test_error_messages_match_torch(torch, case):
    _, fn = ERROR_CASES[case]
    assert_same_error(lambda: fn(engine), lambda: fn(torch))


def test_a_top_level_set_is_listed_as_torch_does(torch):
    """torch refuses a set only as a group's ``params`` (a top-level set goes through ``list``)."""
    for lib in (engine, torch):
        assert len(lib.optim.SGD({leaf(lib)}, lr=0.1).param_groups[0]["params"]) == 1


def test_junk_pre_hook_message():
    kind, msg = error_of(lambda: _junk_pre_hook(engine))
    assert kind == "RuntimeError" and msg.endswith("must return None or a tuple of (new_args, new_kwargs), but got junk.")


def test_duplicate_parameters_in_a_group_warn(torch):
    for lib in (engine, torch):
        p = leaf(lib)
        with pytest.warns(UserWarning, match="duplicate parameters"):
            lib.optim.SGD([p, p], lr=0.1)


def test_named_parameters_give_param_names_and_the_same_state_dict(torch):
    def case(lib):
        return lib.optim.SGD([("w", leaf(lib)), ("b", leaf(lib, 1))], lr=0.1, momentum=0.9).state_dict()

    assert case(engine) == case(torch)
    assert case(engine)["param_groups"][0]["param_names"] == ["w", "b"]


def test_defaults_fill_groups_and_add_param_group(torch):
    def case(lib):
        a, b, c = leaf(lib), leaf(lib), leaf(lib)
        opt = lib.optim.Adam([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.01, betas=(0.8, 0.9))
        opt.add_param_group({"params": (c,), "weight_decay": 0.1})
        return [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups], \
            [len(g["params"]) for g in opt.param_groups]

    assert case(engine) == case(torch)


def test_zero_grad_set_to_none_and_to_zero():
    a, b = leaf(engine), leaf(engine)
    a.grad = engine.ones(2)
    opt = eoptim.SGD([a, b], lr=0.1)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    a.grad = engine.ones(2, requires_grad=True) * 3  # a grad with history: detached, then zeroed
    g = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is g and g.grad_fn is None and not g.requires_grad
    assert g.tolist() == [0.0, 0.0] and b.grad is None


def test_repr_matches_torch(torch):
    def case(lib):
        return repr(lib.optim.Adam([{"params": [leaf(lib)]}, {"params": [leaf(lib)], "lr": 0.1}], lr=1e-3))

    assert case(engine) == case(torch)
    for name in ("SGD", "AdamW", "RMSprop"):
        assert repr(getattr(eoptim, name)([leaf(engine)], lr=0.5)) == repr(getattr(torch.optim, name)([leaf(torch)],
                                                                                                         lr=0.5))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_state_dict_has_torchs_structure(torch, name):
    """Same keys, same hyper-parameters, same state keys per index, same tensor values."""
    kwargs = {"lr": 0.1, "momentum": 0.9} if name in ("SGD", "RMSprop") else {"lr": 0.1}

    def case(lib):
        ps = [lib.tensor([1.0, -2.0], requires_grad=True), lib.tensor([[0.5]], requires_grad=True),
              lib.tensor([3.0], requires_grad=True)]
        opt = getattr(lib.optim, name)([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.2}], **kwargs)
        for p in ps[:2]:  # ps[2] never gets a gradient: no state for index 2
            p.grad = p.detach() * 2
        opt.step()
        sd = opt.state_dict()
        return sd["param_groups"], {i: {k: (v.dtype.__repr__().split(".")[-1], v.tolist()) for k, v in s.items()}
                                    for i, s in sd["state"].items()}

    egroups, estate = case(engine)
    tgroups, tstate = case(torch)
    assert egroups == tgroups
    assert list(estate) == list(tstate) == [0, 1]
    for i in estate:
        assert list(estate[i]) == list(tstate[i])
        for key, (dt, value) in estate[i].items():
            assert dt == tstate[i][key][0]
            np.testing.assert_allclose(value, tstate[i][key][1], rtol=1e-6)


def test_state_dict_shares_the_state_tensors_and_load_casts_and_shares_like_torch(torch):
    def case(lib):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        p.grad = lib.ones(2)
        opt = lib.optim.Adam([p], lr=0.1)
        opt.step()
        sd = opt.state_dict()
        q32 = lib.zeros(2, requires_grad=True)
        q64 = lib.zeros(2, dtype=lib.float64, requires_grad=True)
        opt32, opt64 = lib.optim.Adam([q32]), lib.optim.Adam([q64])
        opt32.load_state_dict(sd)
        opt64.load_state_dict(sd)
        return (sd["state"][0]["exp_avg"] is opt.state[p]["exp_avg"],
                opt32.state[q32]["exp_avg"] is opt.state[p]["exp_avg"],
                str(opt64.state[q64]["exp_avg"].dtype).split(".")[-1],
                opt64.state[q64]["step"] is opt.state[p]["step"],
                opt32.param_groups[0]["lr"], opt32.param_groups[0]["params"][0] is q32)

    assert case(engine) == case(torch) == (True, True, "float64", True, 0.1, True)


def test_load_state_dict_keeps_unknown_keys_and_param_names(torch):
    def case(lib):
        opt = lib.optim.SGD([("w", leaf(lib))], lr=0.1)
        sd = lib.optim.SGD([leaf(lib)], lr=0.3).state_dict()
        sd["state"]["extra"] = {"note": 1}
        opt.load_state_dict(sd)
        return opt.param_groups[0]["param_names"], opt.param_groups[0]["lr"], dict(opt.state)["extra"]

    assert case(engine) == case(torch) == (["w"], 0.3, {"note": 1})


def test_state_dict_and_load_state_dict_hooks_in_torchs_order(torch):
    def case(lib):
        calls = []
        opt = lib.optim.SGD([leaf(lib)], lr=0.1)
        opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
        opt.register_state_dict_pre_hook(lambda o: calls.append("pre-first"), prepend=True)
        opt.register_state_dict_post_hook(lambda o, sd: calls.append("post") or {**sd, "tag": 1})
        h = opt.register_state_dict_post_hook(lambda o, sd: calls.append("removed"))
        h.remove()
        sd = opt.state_dict()

        def swap_lr(o, sd):
            calls.append("load-pre")
            sd = dict(sd)
            sd["param_groups"] = [{**g, "lr": 0.7} for g in sd["param_groups"]]
            return sd

        opt.register_load_state_dict_pre_hook(swap_lr)
        opt.register_load_state_dict_post_hook(lambda o: calls.append(("load-post", o.param_groups[0]["lr"])))
        opt.register_load_state_dict_post_hook(lambda o: calls.append("load-post-first"), prepend=True)
        opt.load_state_dict(sd)
        return calls, sd["tag"]

    assert case(engine) == case(torch)
    assert case(engine)[0][:3] == ["pre-first", "pre", "post"]


def test_deepcopy_of_an_optimizer_keeps_hooks_out():
    import copy

    p = leaf(engine)
    opt = eoptim.SGD([p], lr=0.1, momentum=0.9)
    opt.register_step_pre_hook(lambda *a: None)
    p.grad = engine.ones(2)
    opt.step()
    clone = copy.deepcopy(opt)
    assert len(clone._optimizer_step_pre_hooks) == 0 and clone.param_groups[0]["lr"] == 0.1
    q = clone.param_groups[0]["params"][0]
    assert q is not p and np.array_equal(clone.state[q]["momentum_buffer"].numpy(), [1.0, 1.0])


@pytest.mark.parametrize(("kwargs", "kind"), [({"differentiable": True}, NotImplementedError)])
def test_unsupported_flags_are_refused(kwargs, kind):
    for cls in (eoptim.SGD, eoptim.Adam, eoptim.AdamW, eoptim.RMSprop):
        with pytest.raises(kind, match="differentiable"):
            cls([leaf(engine)], **kwargs)
    for cls in (eoptim.Adam, eoptim.AdamW, eoptim.RMSprop):
        with pytest.raises(NotImplementedError, match="capturable"):
            cls([leaf(engine)], capturable=True)


def test_foreach_and_fused_are_accepted_and_change_nothing():
    ps = [engine.tensor([1.0, -1.0], requires_grad=True) for _ in range(3)]
    opts = [eoptim.Adam([ps[0]], lr=0.1), eoptim.Adam([ps[1]], lr=0.1, foreach=True),
            eoptim.Adam([ps[2]], lr=0.1, fused=True)]
    for p, opt in zip(ps, opts):
        p.grad = engine.tensor([0.3, 0.2])
        opt.step()
    assert ps[0].tolist() == ps[1].tolist() == ps[2].tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="cannot be `True` together"):
            eoptim.SGD([leaf(engine)], lr=0.1, foreach=True, fused=True)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop"])
def test_a_step_count_loaded_as_a_number_becomes_a_step_tensor(torch, name):
    def case(lib):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        p.grad = lib.tensor([0.5, -0.5])
        opt = getattr(lib.optim, name)([p], lr=0.1)
        opt.step()
        sd = opt.state_dict()
        sd["state"][0]["step"] = 1.0  # as older checkpoints stored it
        q = lib.tensor([1.0, 2.0], requires_grad=True)
        q.grad = lib.tensor([0.5, -0.5])
        opt2 = getattr(lib.optim, name)([q], lr=0.1)
        opt2.load_state_dict(sd)
        step = opt2.state[q]["step"]
        opt2.step()
        return type(step).__name__, str(step.dtype).split(".")[-1], step.shape == (), opt2.state[q]["step"].item(), \
            q.tolist()

    got, want = case(engine), case(torch)
    assert got[:4] == want[:4] == ("Tensor", "float32", True, 2.0)
    np.testing.assert_allclose(got[4], want[4], rtol=1e-6)
