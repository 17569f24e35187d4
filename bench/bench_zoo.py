"""A real-model zoo side by side, in one run (issue 31): what modscope costs on ResNet-50,
ViT-B/16 (torchvision), GPT-2 and BERT (transformers configs, random weights), and whether its
summary's totals are right on them.

Per model, three sections:

1. a training step (zero_grad, forward, loss, backward, SGD step), each candidate on its own
   deep copy of one seeded model, interleaved step by step in a new seeded random order each
   round (``_common.interleaved``: medians of the thread's CPU time, one thread):
   ``plain`` and ``plain (A/A)`` (an identical untraced copy: the noise floor), ``full``
   (``modscope.trace(model)`` with the defaults, started once and kept open, as in training),
   ``light`` (modscope's light steps, when the installed modscope has them; otherwise the row
   says "not available": no stand-in is timed), and ``no-op hooks`` (four no-op torch hooks on
   every module: forward pre, forward, full backward pre, full backward: the floor any
   hook-based observer pays), and ``full exact`` (``modscope.trace(model, exact_stats=True)``:
   every parameter's norm, mean and std over all its values, as before they were taken on the
   update's sample; when the installed modscope has the option). Ratios are to ``plain``;
   ``full / floor`` is the figure issue 31 sets at <= 1.10; ``every 50 (mean)`` is derived: one
   full and 49 light steps, the default sampling of ``modscope run``/``record``;
2. totals: one training step under a new ``modscope.trace``, its ``totals()`` (parameters,
   mult-adds of one forward) against the model's own counts: ``sum(p.numel() for p in
   model.parameters())`` (torch counts a tied weight once) and torch's ``FlopCounterMode`` over
   one forward, halved (it counts 2 FLOPs per multiply-accumulate of mm/addmm/bmm/conv/SDPA; the
   CPU flash-attention kernel, which it misses, given torch's SDPA formula here);
   torchinfo's figures beside them;
3. peers, one forward each, interleaved: ``plain forward``, a forward in a new
   ``modscope.trace`` (attach, forward, graph, detach), ``torchview.draw_graph`` (the graph
   object, nothing rendered), ``torchinfo.summary(verbose=0)``; then, for every model after all
   of those, ``torchlens.trace`` (saves every activation, its default) against a plain forward.
   torchlens goes last because its first call wraps torch's functions and leaves them wrapped
   (its default): under those wrappers torchview's recorder walks a tensor storage element by
   element in Python (minutes for one ResNet-50 forward), and every plain forward pays the
   wrappers; its first call (the wrapping included) is reported apart. A peer that is not
   installed, or that fails on a model, says so in its cell.

torch's full backward hooks refuse a model that modifies a hooked module's output in place
(torchvision's ResNet: ``ReLU(inplace=True)``, ``out += identity`` in every block: "Output 0 of
BackwardHookFunction is a view and is being modified inplace"); there the floor row says so
instead of a time (modscope's torch backend observes backward without those hooks).

Sizes (the full architectures, small inputs, so that a run takes minutes on one thread of a
shared 2-core machine; ``--quick``: 64x64 images, 16 tokens, 3 rounds): ResNet-50 and ViT-B/16
(36 patches and the class token) batch 1 at 96x96, GPT-2 (124M, 12 layers, LM head tied to the
token embedding) and BERT-base (12 layers, masked-LM head tied likewise) batch 1, 32 tokens. At
these sizes the SGD update of 86-124M parameters is a large part of a step.

Needs the bench venv (``bash scripts/zoo_venv.sh``: torch 2.14.1 + torchvision 0.29.1 on
x86_64, transformers, the peers, modscope editable). Run:
``OMP_NUM_THREADS=1 .venv-zoo/bin/python bench/bench_zoo.py`` (``--rounds``, ``--peer-runs``,
``--models resnet50,gpt2``, ``--quick``). In a venv without torchvision or transformers (``make
bench`` runs every script in ``.venv``) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import importlib.util
import inspect
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy and torch load)

torch = _common.try_torch()  # also torch.set_num_threads(1)
if torch is None:
    sys.exit("bench_zoo.py needs PyTorch: bash scripts/zoo_venv.sh, then run it with .venv-zoo/bin/python")

_MISSING = [name for name in ("torchvision", "transformers") if importlib.util.find_spec(name) is None]
if _MISSING:  # `make bench` runs every bench/bench_*.py in .venv, which has neither: a skip, said so
    print(f"bench_zoo.py skipped: {' and '.join(_MISSING)} not installed in {sys.prefix}; the zoo runs in its own "
          "venv: bash scripts/zoo_venv.sh && OMP_NUM_THREADS=1 .venv-zoo/bin/python bench/bench_zoo.py")
    sys.exit(0)

from torch.utils import flop_counter  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import modscope  # noqa: E402

F = torch.nn.functional
NOT_AVAILABLE = "not available"
EVERY = 50  # modscope run / record's default: a full step every 50 (capture.sampling.DEFAULT_EVERY)


# --- the zoo ---------------------------------------------------------------------------------------


@dataclass
class Zoo:
    """One model of the zoo: how to build it (seeded), its input and its loss."""
    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, torch.Tensor]]  # (model input, target)
    loss: Callable[[Any, torch.Tensor], torch.Tensor]  # (model output, target) -> scalar
    size: str


def _images(batch: int, side: int, classes: int = 1000) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    def make() -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(0)
        return torch.randn(batch, 3, side, side, generator=gen), torch.randint(0, classes, (batch,), generator=gen)
    return make


def _tokens(batch: int, seq: int, vocab: int) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    def make() -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(0)
        ids = torch.randint(0, vocab, (batch, seq), generator=gen)
        return ids, ids
    return make


def _cross_entropy(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out, target)


def _lm_loss(out: Any, target: torch.Tensor) -> torch.Tensor:
    """Next-token (GPT-2) or token (BERT masked LM, every position a target) cross-entropy on the
    logits, computed here so each model is called with its input alone (as the peers call it)."""
    logits = out.logits if hasattr(out, "logits") else out[0]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def _resnet50() -> torch.nn.Module:
    from torchvision.models import resnet50
    return resnet50(weights=None)


def _vit_b_16(side: int) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        from torchvision.models import vit_b_16
        return vit_b_16(weights=None, image_size=side)
    return build


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config())  # gpt2 (124M): 12 layers, 768 wide, lm_head tied to wte


def _bert() -> torch.nn.Module:
    from transformers import BertConfig, BertForMaskedLM
    return BertForMaskedLM(BertConfig())  # bert-base-uncased's shape: 12 layers, 768 wide, decoder tied


def zoo(quick: bool) -> list[Zoo]:
    side, seq = (64, 16) if quick else (96, 32)
    return [
        Zoo("ResNet-50", _resnet50, _images(1, side), _cross_entropy, f"batch 1, 3x{side}x{side}"),
        Zoo("ViT-B/16", _vit_b_16(side), _images(1, side), _cross_entropy, f"batch 1, 3x{side}x{side}"),
        Zoo("GPT-2", _gpt2, _tokens(1, seq, 50257), _lm_loss, f"batch 1, {seq} tokens"),
        Zoo("BERT", _bert, _tokens(1, seq, 30522), _lm_loss, f"batch 1, {seq} tokens"),
    ]


def seeded(entry: Zoo) -> torch.nn.Module:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return entry.build().train()


# --- training-step candidates ----------------------------------------------------------------------


def make_step(model: torch.nn.Module, entry: Zoo, x: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def step() -> None:
        opt.zero_grad()
        entry.loss(model(x), y).backward()
        opt.step()
    return step


def noop_hooks(model: torch.nn.Module) -> list[Any]:
    """Four no-op hooks on every module: what any observer built on module hooks pays at least."""
    def pre(module, args):
        return None

    def post(module, args, output):
        return None

    def bw_pre(module, grad_output):
        return None

    def bw(module, grad_input, grad_output):
        return None

    handles = []
    for module in model.modules():
        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post),
                    module.register_full_backward_pre_hook(bw_pre), module.register_full_backward_hook(bw)]
    return handles


def light_trace_kwargs() -> dict[str, Any] | None:
    """The ``modscope.trace`` arguments under which every step after the first two is light
    (``every``: a full step every N, here never again; ``capture.sampling``), or None where this
    modscope has no light steps."""
    params = inspect.signature(modscope.trace).parameters
    if "every" in params and "first" in params:
        return {"every": 10**9, "first": 2}  # the warm-up runs the two full steps; every timed one is light
    return None


def training(entry: Zoo, rounds: int, warmup: int) -> dict[str, float | str]:
    """Median seconds per training step of each candidate ("not available" for the light step
    where modscope has none); the traces are stopped and the hooks removed afterwards."""
    base = seeded(entry)
    x, y = entry.inputs()
    candidates: dict[str, Callable[[], None]] = {}
    traces, handles = [], []
    light = light_trace_kwargs()
    exact = "exact_stats" in inspect.signature(modscope.trace).parameters
    for name in ("plain", "plain (A/A)", "full", "full exact", "light", "no-op hooks"):
        if (name == "light" and light is None) or (name == "full exact" and not exact):
            continue
        model = copy.deepcopy(base)
        if name == "full":
            traces.append(modscope.trace(model).start())
        elif name == "full exact":
            traces.append(modscope.trace(model, exact_stats=True).start())
        elif name == "light":
            traces.append(modscope.trace(model, **light).start())
        elif name == "no-op hooks":
            handles += noop_hooks(model)
        candidates[name] = make_step(model, entry, x, y)
    refused = _refused(candidates.get("no-op hooks"))
    if refused:
        del candidates["no-op hooks"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # full backward hooks on modules whose inputs need no grad
        result: dict[str, float | str] = dict(_common.interleaved(candidates, rounds, steps=1, warmup=warmup))
    for tr in traces:
        tr.stop()
    for h in handles:
        h.remove()
    if light is not None:  # the light candidate's timed steps must be light ones
        details = [e.get("detail") for e in traces[-1].events if e["kind"] == "step"]
        print(f"  {entry.name}: the light trace saw {details.count('full')} full and {details.count('light')} light "
              f"steps", flush=True)
    errors = [e for tr in traces for e in tr.events if e["kind"] == "error"]
    if errors:  # a bench of a failing tracer measures the failure
        print(f"  {entry.name}: the traces recorded {len(errors)} errors, first: {errors[0]}", file=sys.stderr)
    if light is None:
        result["light"] = NOT_AVAILABLE
    if not exact:
        result["full exact"] = NOT_AVAILABLE
    if refused:
        result["no-op hooks"] = refused
    return result


def _refused(step: Callable[[], None] | None) -> str:
    """"" when ``step`` runs, else why torch refused it (the floor's full backward hooks on a model
    that writes into a hooked module's output in place)."""
    if step is None:
        return ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step()
    except RuntimeError as exc:
        return "torch refuses: " + str(exc).split(". ")[0]
    return ""


# --- totals ---------------------------------------------------------------------------------------


def _cpu_flash_attention(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``aten._scaled_dot_product_flash_attention_for_cpu`` (``QK^T`` and ``AV``), which
    torch's ``FlopCounterMode`` has no formula for (it counts 0: torchvision's ViT attention on
    the CPU runs this kernel); the formula torch uses for the other SDPA kernels."""
    return flop_counter.sdpa_flop_count(query_shape, key_shape, value_shape)


CPU_ATTENTION = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_flash_attention}


def totals(entry: Zoo) -> dict[str, Any]:
    """modscope's summary totals after one traced training step, the model's own counts and
    torchinfo's."""
    model = seeded(entry)
    x, y = entry.inputs()
    step = make_step(model, entry, x, y)
    with modscope.trace(model) as tr:
        step()
    ours = tr.totals()
    with FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION) as counter:
        model(x)
    own_params = sum(p.numel() for p in model.parameters())  # torch's parameters(): a tied weight once
    row: dict[str, Any] = {"modscope params": ours["params"], "torch params": own_params,
                           "modscope mult-adds": ours["mult_adds"], "torch mult-adds": counter.get_total_flops() // 2}
    try:
        import torchinfo
        info = torchinfo.summary(model, input_data=[x], verbose=0)
        row["torchinfo params"], row["torchinfo mult-adds"] = info.total_params, info.total_mult_adds
    except ImportError:
        row["torchinfo params"] = row["torchinfo mult-adds"] = "not installed"
    except Exception as exc:  # noqa: BLE001  (a peer's failure on a model is a finding, reported)
        row["torchinfo params"] = row["torchinfo mult-adds"] = f"failed: {type(exc).__name__}"
    return row


# --- peers -----------------------------------------------------------------------------------------


def _torchview(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], object]:
    tv = importlib.import_module("torchview")
    return lambda: tv.draw_graph(model, input_data=x, save_graph=False)


def _torchinfo(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], object]:
    ti = importlib.import_module("torchinfo")
    return lambda: ti.summary(model, input_data=[x], verbose=0)


def _torchlens(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], object]:
    tl = importlib.import_module("torchlens")
    log = getattr(tl, "log_forward_pass", None) or tl.trace
    return lambda: log(model, x)


PEERS = (("torchview.draw_graph", _torchview), ("torchinfo.summary", _torchinfo))
TORCHLENS = "torchlens.trace"


def _usable(make: Callable[[torch.nn.Module, torch.Tensor], Callable[[], object]], model: torch.nn.Module,
            x: torch.Tensor) -> tuple[Callable[[], object] | None, str, float]:
    """``(run, "", seconds)`` after one untimed-by-the-median call of a peer (its warm-up; the
    thread's CPU seconds it took), or ``(None, why, 0)`` when it is not installed or fails."""
    try:
        run = make(model, x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.thread_time()
            run()
            return run, "", time.thread_time() - start
    except ImportError:
        return None, "not installed", 0.0
    except Exception as exc:  # noqa: BLE001  (a peer's failure on a model is a finding, reported)
        return None, f"failed: {type(exc).__name__}: {str(exc)[:60]}", 0.0


def peers(entry: Zoo, runs: int) -> dict[str, float | str]:
    """Median seconds of one forward by itself, in a new modscope trace, and under torchview and
    torchinfo (before torchlens has ever run in this process)."""
    model = seeded(entry)
    x, _ = entry.inputs()

    def traced() -> None:
        with modscope.trace(model):
            model(x)

    candidates: dict[str, Callable[[], object]] = {"plain forward": lambda: model(x), "modscope.trace": traced}
    failed: dict[str, str] = {}
    for name, make in PEERS:
        run, why, _ = _usable(make, model, x)
        if run is None:
            failed[name] = why
        else:
            candidates[name] = run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result: dict[str, float | str] = dict(_common.interleaved(candidates, runs, steps=1, warmup=1))
    result.update(failed)
    return result


def torchlens_forward(entry: Zoo, runs: int) -> dict[str, float | str]:
    """torchlens's first call (it wraps torch's functions then, and leaves them wrapped: its
    default) and the median of its later calls, beside a plain forward that now runs on the
    wrapped functions too."""
    model = seeded(entry)
    x, _ = entry.inputs()
    run, why, first = _usable(_torchlens, model, x)
    if run is None:
        return {"first call": why, TORCHLENS: why, "plain forward": why}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result: dict[str, float | str] = dict(_common.interleaved({"plain forward": lambda: model(x), TORCHLENS: run},
                                                                  runs, steps=1, warmup=0))
    result["first call"] = first
    return result


# --- report ----------------------------------------------------------------------------------------


def _ms(v: float | str) -> str:
    return v if isinstance(v, str) else f"{v * 1e3:.1f} ms"


def _ratio(v: float | str, base: float | str) -> str:
    if isinstance(v, str) or isinstance(base, str):
        return v if isinstance(v, str) else "--"
    return f"x{v / base:.2f}"


def _count(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "uptime unavailable"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds of one training step each")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps of each candidate first")
    ap.add_argument("--peer-runs", type=int, default=3,
                    help="interleaved rounds of one forward under each peer (0: no peer comparison)")
    ap.add_argument("--models", default="", help="comma-separated names (default: all): resnet50,vit,gpt2,bert")
    ap.add_argument("--quick", action="store_true", help="tiny inputs, 3 rounds: a smoke run of the script")
    args = ap.parse_args()
    if args.rounds < 1 or args.peer_runs < 0 or args.warmup < 0:
        ap.error("--rounds must be at least 1, --peer-runs and --warmup at least 0")
    if args.quick:
        args.rounds, args.peer_runs, args.warmup = 3, 2, 2
    keys = {"resnet50": "ResNet-50", "vit": "ViT-B/16", "gpt2": "GPT-2", "bert": "BERT"}
    wanted = {keys[k.strip()] for k in args.models.split(",") if k.strip()} if args.models else set(keys.values())
    models = [m for m in zoo(args.quick) if m.name in wanted]

    versions = {"torch": torch.__version__, "modscope": modscope.__version__}
    for name in ("torchvision", "transformers", "torchlens", "torchview", "torchinfo"):
        try:
            versions[name] = importlib.import_module(name).__version__
        except ImportError:
            versions[name] = "not installed"
    print("versions:", ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"threads: torch {torch.get_num_threads()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"load before: {uptime()}")
    light = light_trace_kwargs()
    print(f"light steps: {'modscope.trace(' + repr(light) + ')' if light else NOT_AVAILABLE + ' in this modscope'}")

    steps: dict[str, dict[str, float | str]] = {}
    counts: dict[str, dict[str, Any]] = {}
    for entry in models:  # section 1 and 2 for every model before torchlens is first called
        print(f"{entry.name} ({entry.size}): training steps, {args.rounds} rounds ...", flush=True)
        steps[entry.name] = training(entry, args.rounds, args.warmup)
        counts[entry.name] = totals(entry)
    forwards, lens = {}, {}
    for entry in models if args.peer_runs else []:
        print(f"{entry.name}: one forward under modscope, torchview, torchinfo, {args.peer_runs} rounds ...",
              flush=True)
        forwards[entry.name] = peers(entry, args.peer_runs)
    for entry in models if args.peer_runs else []:  # torchlens last: it leaves torch's functions wrapped
        print(f"{entry.name}: one forward under torchlens, {args.peer_runs} rounds ...", flush=True)
        lens[entry.name] = torchlens_forward(entry, args.peer_runs)
    print(f"load after: {uptime()}\n")

    print("Training step (median CPU ms, one thread; ratios to plain):\n")
    print("| model | input | plain | A/A | full | light | every 50 (mean) | no-op hooks | full / floor | full exact | "
          "exact / floor |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for entry in models:
        r = steps[entry.name]
        plain = r["plain"]
        mixed = (r["light"] * (EVERY - 1) + r["full"]) / EVERY if not isinstance(r["light"], str) else r["light"]
        print(f"| {entry.name} | {entry.size} | {_ms(plain)} | {_ratio(r['plain (A/A)'], plain)} | "
              f"{_ratio(r['full'], plain)} | {_ratio(r['light'], plain)} | {_ratio(mixed, plain)} | "
              f"{_ratio(r['no-op hooks'], plain)} | {_ratio(r['full'], r['no-op hooks'])} | "
              f"{_ratio(r['full exact'], plain)} | {_ratio(r['full exact'], r['no-op hooks'])} |")
    print(f"\n'every {EVERY} (mean)': one full step and {EVERY - 1} light ones, from the two medians (modscope "
          "run/record's default sampling, every=50).")

    print("\nSummary totals: modscope vs the model's own counts (params: model.parameters(); mult-adds: "
          "FlopCounterMode / 2 over one forward) and torchinfo:\n")
    print("| model | params: modscope | torch | torchinfo | mult-adds: modscope | torch | torchinfo |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for entry in models:
        c = counts[entry.name]
        flag_p = "" if c["modscope params"] == c["torch params"] else " **differs**"
        flag_m = "" if c["modscope mult-adds"] == c["torch mult-adds"] else " **differs**"
        print(f"| {entry.name} | {_count(c['modscope params'])}{flag_p} | {_count(c['torch params'])} | "
              f"{_count(c['torchinfo params'])} | {_count(c['modscope mult-adds'])}{flag_m} | "
              f"{_count(c['torch mult-adds'])} | {_count(c['torchinfo mult-adds'])} |")

    if not args.peer_runs:
        print("\nNo peer comparison (--peer-runs 0).")
        return
    print("\nOne forward under each tool (median CPU ms of the thread; ratio to the plain forward). torchlens ran "
          "last, its plain forward on the functions it left wrapped; its first call wraps them:\n")
    names = ["modscope.trace", *(n for n, _ in PEERS)]
    print("| model | plain forward | " + " | ".join(names) + " | torchlens: plain forward | torchlens.trace | "
          "torchlens first call |")
    print("| --- |" + " --- |" * (len(names) + 4))
    for entry in models:
        r, t = forwards[entry.name], lens[entry.name]
        cells = [_ms(r["plain forward"])] + [_with_ratio(r[n], r["plain forward"]) for n in names]
        cells += [_ms(t["plain forward"]), _with_ratio(t[TORCHLENS], t["plain forward"]), _ms(t["first call"])]
        print(f"| {entry.name} | " + " | ".join(cells) + " |")


def _with_ratio(v: float | str, base: float | str) -> str:
    return v if isinstance(v, str) else f"{_ms(v)} ({_ratio(v, base)})"

if __name__ == "__main__":
    main()
