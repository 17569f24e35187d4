"""Realistic torch training scripts (tests/realcode/scripts/) run unchanged on the engine, and match
torch's losses step by step when both start from torch's weights (see _harness.py for how the same
source runs under both libraries and how the training randomness is shared)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.realcode import _harness as h

# steps per script: enough for the optimizer state and schedulers to matter, few for the slow convs
STEPS = {"mnist_cnn": 3, "mingpt": 30, "checkpoint_resume": 4, "mobilenetv2": 4, "unet": 4,
         "tabular_ctr": 8, "ppo_continuous": 10}  # the plateau schedule cuts the lr; a second rollout
DEFAULT_STEPS = 6
TOLERANCE = 1e-4  # |loss_engine - loss_torch| / max(1, |loss_torch|), every step

pytestmark = pytest.mark.filterwarnings(
    # both libraries warn the same about the transformer script's options; not the subject here
    "ignore:enable_nested_tensor is True:UserWarning",
    "ignore:Support for mismatched key_padding_mask:UserWarning",
    # nanoGPT's loop builds torch.cuda.amp.GradScaler: deprecated, and disabled without CUDA (both say so)
    "ignore:.*torch.cuda.amp.GradScaler.* is deprecated:FutureWarning",
    "ignore:torch.cuda.amp.GradScaler is enabled, but CUDA is not available:UserWarning",
)


def test_there_are_at_least_twelve_scripts():
    assert len(h.NAMES) >= 12, h.NAMES


@pytest.mark.parametrize("name", h.NAMES)
def test_runs_on_the_engine(name):
    """As a user runs it: dropout on, the engine's own random numbers; the loss goes down."""
    module = h.load(name, "engine")
    assert module.torch is engine and module.nn is engine.nn
    losses = h.run_engine(name, STEPS.get(name, DEFAULT_STEPS))
    assert h.finite(losses), losses
    assert min(losses[1:]) < losses[0], losses


@pytest.mark.parametrize("name", h.NAMES)
def test_matches_torch(name):
    pytest.importorskip("torch")
    steps = STEPS.get(name, DEFAULT_STEPS)
    e_losses, t_losses = h.compare(name, steps)
    assert len(e_losses) == len(t_losses) >= steps
    assert h.finite(e_losses)
    assert h.max_rel_diff(e_losses, t_losses) < TOLERANCE, (e_losses, t_losses)


def test_mingpt_adamw_30_steps_within_1e6():
    """The issue's figure: torch's weights copied in, |delta loss| < 1e-6 over 30 AdamW steps."""
    pytest.importorskip("torch")
    e_losses, t_losses = h.compare("mingpt", 30)
    assert max(abs(a - b) for a, b in zip(e_losses, t_losses)) < 1e-6


@pytest.mark.parametrize("backend", ["engine", "torch"])
def test_resumed_training_equals_uninterrupted(backend):
    if backend == "torch":
        pytest.importorskip("torch")
    lib = __import__(backend)
    module = h.load("checkpoint_resume", backend)
    data = module.get_data()
    lib.manual_seed(0)
    first = module.build()
    second = module.build()
    second.load_state_dict(first.state_dict())
    straight = module.train(first, data, 4, resume_at=-1)
    resumed = module.train(second, data, 4)
    assert len(straight) == len(resumed) == 16
    np.testing.assert_allclose(resumed, straight, rtol=0, atol=1e-6)


def test_same_weights_give_the_same_first_loss_for_every_model():
    """The copy through NumPy covers every parameter and buffer (a missed one shows at step 0)."""
    torch = pytest.importorskip("torch")
    for name in h.NAMES:
        t_mod, e_mod = h.load(name, "torch"), h.load(name, "engine")
        torch.manual_seed(0)
        t_model, e_model = t_mod.build(), e_mod.build()
        h.copy_state(t_model, e_model)
        e_state = e_model.state_dict()
        for key, value in t_model.state_dict().items():
            np.testing.assert_array_equal(e_state[key].numpy(), value.numpy(), err_msg=f"{name}: {key}")


@pytest.mark.parametrize(("source", "expected"), [
    ("import torch\n", "import engine as torch\n"),
    ("import torch.nn as nn\n", "import engine.nn as nn\n"),
    ("import torch.utils.data\n", "import engine.utils.data; import engine as torch\n"),
    ("from torch import nn, optim\n", "from engine import nn, optim\n"),
    ("from torch.nn import functional as F\n", "from engine.nn import functional as F\n"),
    ("    import torch\n", "    import engine as torch\n"),
    ("x = 'import torch'  # from torch import x\n", "x = 'import torch'  # from torch import x\n"),
    ("import torchvision\nfrom torchaudio import y\n", "import torchvision\nfrom torchaudio import y\n"),
])
def test_import_swap(source, expected):
    assert h.to_engine(source) == expected


def test_twinned_randomness_is_the_same_under_both_libraries():
    torch = pytest.importorskip("torch")
    t_mod = h.load("vae", "torch", twin_seed=3)
    e_mod = h.load("vae", "engine", twin_seed=3)
    t_draw = t_mod.torch.randn_like(torch.zeros(2, 3))
    e_draw = e_mod.torch.randn_like(engine.zeros(2, 3))
    np.testing.assert_array_equal(e_draw.numpy(), t_draw.numpy())
    for args, kwargs in [((10, (5,)), {}), ((3, 9, (2, 2)), {}), ((7,), {"size": (4,)})]:
        e_int = e_mod.torch.randint(*args, **kwargs)
        t_int = t_mod.torch.randint(*args, **kwargs)
        np.testing.assert_array_equal(e_int.numpy(), t_int.numpy())
        assert e_int.dtype == engine.int64 and t_int.dtype == torch.int64
    assert t_draw.dtype == torch.float32 and e_draw.dtype == engine.float32
    assert h.load("mnist_cnn", "engine", twin_seed=0).DROPOUT == 0.0
    # distributions imported by name are twinned too: the same actions under both libraries
    draws = []
    for lib in (engine, torch):
        module = h.load("reinforce", lib.__name__, twin_seed=5)
        assert module.Categorical is not lib.distributions.Categorical
        probs = lib.tensor([[0.2, 0.5, 0.3]] * 64)
        draws.append(module.Categorical(probs).sample().numpy())
        assert (h.load("reinforce", lib.__name__).Categorical is lib.distributions.Categorical)
    np.testing.assert_array_equal(draws[0], draws[1])
    assert len(set(draws[0].tolist())) == 3
