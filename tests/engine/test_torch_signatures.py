"""The classes, not the instances: the engine's names checked against torch's own, so a gap is
found by a test rather than by the next public script.

- every creation function takes every keyword torch's takes (torch's documented signature, the
  first line of its docstring, plus the argument parser's overloads where it lists them);
- so do the binary ops and products (``input``/``other``, ``alpha``, ``rounding_mode``,
  ``exponent``, ``mat2``, ...), as functions and as Tensor methods; ``out=`` is the known lack;
- every torch submodule that public training code imports, imports from the engine too;
- every ``is_*`` device/type flag of torch's Tensor exists on the engine's, with the CPU answer.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re

import pytest

import engine

torch = pytest.importorskip("torch")

CREATION = ["empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
            "logspace", "eye", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
            "randint_like", "tensor", "as_tensor", "asarray", "scalar_tensor", "normal", "bernoulli",
            "tril_indices", "triu_indices", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
            "kaiser_window", "from_numpy", "empty_strided", "frombuffer", "range", "empty_permuted"]
# keywords the engine deliberately lacks: named tensors (``names=``) are not implemented
LACKED_KEYWORDS = {"names"}


def _docstring_names(fn) -> set[str]:
    """Parameter names in the first line of torch's docstring, e.g.
    ``zeros(*size, *, out=None, dtype=None, ...) -> Tensor`` (``*size`` is the keyword ``size``)."""
    first = (fn.__doc__ or "").strip().split("\n")[0]
    match = re.match(r"\w+\((.*)\)\s*->", first)
    if not match:  # undocumented (scalar_tensor): the parser's names only
        return set()
    names = set()
    for part in re.split(r",\s*", match.group(1)):
        part = part.strip().lstrip("\\*").split("=")[0].split(":")[0].strip()
        if part and part != "...":
            names.add(part)
    return names


def _parser_names(fn) -> set[str] | None:
    """The names in the argument parser's list of overloads, which it prints when no overload
    matches (only functions with several overloads print it); None for a function that takes
    no keywords at all."""
    try:
        fn(object(), __bogus__=1)
    except TypeError as error:
        if "takes no keyword arguments" in str(error):
            return None
        overloads = re.findall(r"^ \* \((.*)\)$", str(error), re.M)
    else:  # pragma: no cover
        return set()
    return {p.split(" = ")[0].split(" ")[-1] for o in overloads for p in o.split(", ") if p.strip() not in ("*", "")}


def _schema_names(name: str) -> set[str]:
    """For an undocumented single-overload builtin (scalar_tensor): the argument names of the
    ATen operator's main schema (not its ``.out`` variant, which Python does not take)."""
    schemas = [s for s in torch._C._jit_get_schemas_for_operator(f"aten::{name}") if s.overload_name != "out"]
    return {"input" if a.name == "self" else a.name for s in schemas for a in s.arguments} | {"requires_grad"}


def torch_keywords(name: str) -> set[str]:
    fn = getattr(torch, name)
    try:
        return set(inspect.signature(fn).parameters) - {"args", "kwargs"}
    except (TypeError, ValueError):  # a builtin: no signature object
        parser = _parser_names(fn)
        if parser is None:  # positional only (from_numpy)
            return set()
        names = _docstring_names(fn) | parser or _schema_names(name)
        assert names, f"found no signature for torch.{name}"
        return names


@pytest.mark.parametrize("name", CREATION)
def test_creation_function_takes_torchs_keywords(name):
    params = inspect.signature(getattr(engine, name)).parameters
    accepted = {n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    wanted = torch_keywords(name) - LACKED_KEYWORDS
    assert wanted <= accepted, f"engine.{name} lacks torch's keywords {sorted(wanted - accepted)}"


# the binary ops (torch.mul(input, other=...), add's alpha, div's rounding_mode, pow's exponent)
BINARY = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
          "fmod", "pow", "float_power", "atan2", "arctan2", "maximum", "minimum", "fmax", "fmin", "hypot", "copysign",
          "nextafter", "ldexp", "xlogy", "logaddexp", "logaddexp2", "eq", "ne", "lt", "le", "gt", "ge", "greater",
          "less", "greater_equal", "less_equal", "not_equal", "bitwise_and", "bitwise_or", "bitwise_xor",
          "logical_and", "logical_or", "logical_xor", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift",
          "heaviside"]
# what the engine's binary ops lack: ``out=`` (no op of the engine writes into a given tensor),
# ``self=`` (the parser's name for a number first operand, ``torch.pow(self=2, exponent=t)``) and
# true_divide's legacy ``dividend``/``divisor`` overload
LACKED_BINARY = {"out", "self", "dividend", "divisor"}


@pytest.mark.parametrize("name", BINARY)
def test_binary_op_takes_torchs_keywords(name):
    params = inspect.signature(getattr(engine, name)).parameters
    wanted = torch_keywords(name) - LACKED_BINARY
    assert wanted <= set(params), f"engine.{name} lacks torch's keywords {sorted(wanted - set(params))}"
    start = 1 if name.startswith(("bitwise", "gcd", "lcm")) else 1.0  # (integer-only ops)
    x, e = torch.arange(start, 4), engine.arange(start, 4)
    first_two = list(params)[:2]  # the operands by keyword, as torch takes them
    want = getattr(torch, name)(**dict(zip(first_two, (x, x))))
    assert getattr(engine, name)(**dict(zip(first_two, (e, e)))).tolist() == want.tolist()


# the products and comparisons of two tensors, with operands of shapes they take
MATRIX = {"matmul": ((3,), (3,)), "mm": ((2, 3), (3, 2)), "bmm": ((2, 2, 3), (2, 3, 2)), "dot": ((3,), (3,)),
          "outer": ((3,), (2,)), "ger": ((3,), (2,)), "cross": ((3,), (3,)), "kron": ((2,), (3,)),
          "inner": ((3,), (3,)), "isclose": ((3,), (3,)), "equal": ((3,), (3,))}


@pytest.mark.parametrize("name", MATRIX)
def test_product_takes_torchs_keywords(name):
    params = inspect.signature(getattr(engine, name)).parameters
    wanted = torch_keywords(name) - {"out"}
    assert wanted <= set(params), f"engine.{name} lacks torch's keywords {sorted(wanted - set(params))}"
    first_two = list(params)[:2]
    args = [lib.arange(1.0, 1.0 + math.prod(s)).reshape(s) for lib in (torch, engine) for s in MATRIX[name]]
    want = getattr(torch, name)(**dict(zip(first_two, args[:2])))
    got = getattr(engine, name)(**dict(zip(first_two, args[2:])))
    assert (got if isinstance(got, bool) else got.tolist()) == (want if isinstance(want, bool) else want.tolist())


# Tensor methods: the second operand by torch's keyword
METHOD_KEYWORDS = {"mul": "other", "add": "other", "sub": "other", "div": "other", "pow": "exponent",
                   "remainder": "other", "fmod": "other", "floor_divide": "other", "atan2": "other",
                   "maximum": "other", "eq": "other", "lt": "other", "matmul": "other", "mm": "mat2",
                   "dot": "tensor", "outer": "vec2", "kron": "other", "isclose": "other", "equal": "other",
                   "hypot": "other", "xlogy": "other", "logaddexp": "other", "logical_and": "other"}


@pytest.mark.parametrize("name", METHOD_KEYWORDS)
def test_tensor_method_takes_the_operand_by_torchs_keyword(name):
    def call(lib):
        x = lib.arange(1.0, 5.0).reshape(2, 2) if name == "mm" else lib.arange(1.0, 4.0)
        got = getattr(x, name)(**{METHOD_KEYWORDS[name]: x})
        return got if isinstance(got, bool) else got.tolist()
    assert call(engine) == call(torch)


def test_the_docstring_parser_sees_size():
    """``zeros(*size, ...)`` in torch's docs means a ``size=`` keyword (torch.zeros(size=(2,)) works)."""
    assert {"size", "out", "dtype", "layout", "device", "requires_grad"} <= torch_keywords("zeros")
    assert {"low", "high", "size", "generator"} <= torch_keywords("randint")


# what public training code imports (the 21 scripts of issue 29 and the repos they come from:
# official examples, minGPT, nanoGPT, makemore, CleanRL, the Annotated Transformer)
SUBMODULES = [
    "nn", "nn.functional", "nn.init", "nn.modules", "nn.parameter", "nn.utils", "nn.utils.rnn",
    "nn.utils.clip_grad", "nn.utils.parametrize", "nn.utils.parametrizations", "nn.parallel",
    "optim", "optim.lr_scheduler", "optim.swa_utils", "utils", "utils.data", "utils.data.sampler",
    "utils.data.dataloader", "utils.data.distributed", "utils.checkpoint", "utils.hooks", "autograd",
    "autograd.functional", "autograd.graph", "distributions", "fft", "linalg", "special", "testing", "backends",
    "backends.cudnn", "backends.cuda", "backends.mps", "cuda", "cuda.amp", "amp", "distributed", "multiprocessing",
    "onnx", "func", "random", "serialization", "version", "jit", "profiler", "hub", "futures", "compiler",
    "nn.modules.utils", "nn.common_types", "nn.utils.prune", "nn.attention",
]
# torch submodules the engine does not provide (none left that public training code imports)
NOT_PROVIDED = ["package"]


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodule_imports_as_in_torch(name):
    importlib.import_module(f"torch.{name}")
    module = importlib.import_module(f"engine.{name}")
    parent, _, leaf = f"engine.{name}".rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is module  # an attribute of its parent too


@pytest.mark.parametrize("name", NOT_PROVIDED)
def test_submodules_not_provided(name):
    importlib.import_module(f"torch.{name}")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"engine.{name}")


def _torch_flags() -> list[str]:
    return sorted(n for n in dir(torch.Tensor) if n.startswith("is_"))


def test_torch_has_the_flags_this_test_expects():
    assert {"is_xpu", "is_cuda", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_nested"} <= set(_torch_flags())


@pytest.mark.parametrize("flag", _torch_flags())
def test_tensor_flag_matches_torch(flag):
    """Every ``is_*`` of torch's Tensor: a property gives torch's CPU answer; a method exists and
    answers as torch does for a plain dense CPU tensor (or raises the same way)."""
    t, e = torch.zeros(3), engine.zeros(3)
    want = getattr(t, flag)
    assert hasattr(e, flag), f"engine.Tensor lacks {flag}"
    got = getattr(e, flag)
    if not callable(want):
        assert type(got) is bool and got == want
        return
    assert callable(got)
    args = {"is_same_size": (t,), "is_set_to": (t,)}.get(flag, ())
    eargs = {"is_same_size": (e,), "is_set_to": (e,)}.get(flag, ())
    try:
        expected = want(*args)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=re.escape(str(error).split("\n")[0])):
            got(*eargs)
        return
    assert got(*eargs) == expected


def test_is_set_to_compares_views():
    for lib in (torch, engine):
        x = lib.zeros(3, 2)
        assert x.is_set_to(x) and x.is_set_to(x.view(3, 2)) and x.is_set_to(x[:])
        assert not x.is_set_to(x.clone()) and not x.is_set_to(x.view(6)) and not x.is_set_to(x[1:])
        with pytest.raises(TypeError, match="must be Tensor, not int"):
            x.is_set_to(3)


# --- the names public code calls in torch.jit, torch.profiler, torch.hub, torch.func, ...: torch's
# parameter names ---

API = {
    "jit": ["script", "trace", "trace_module", "ignore", "unused", "export", "interface", "is_scripting",
            "is_tracing", "annotate", "save", "load", "freeze", "optimize_for_inference"],
    "profiler": ["schedule", "tensorboard_trace_handler", "supported_activities"],
    "hub": ["get_dir", "set_dir", "load_state_dict_from_url", "load", "list", "help", "download_url_to_file"],
    "func": ["vmap", "functional_call", "grad", "grad_and_value"],
    "nn.utils.prune": ["identity", "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
                       "global_unstructured", "custom_from_mask", "remove", "is_pruned"],
    "nn.attention": ["sdpa_kernel"],
    "backends.cuda": ["enable_flash_sdp", "flash_sdp_enabled", "enable_math_sdp", "math_sdp_enabled",
                      "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "enable_cudnn_sdp", "cudnn_sdp_enabled",
                      "is_flash_attention_available", "sdp_kernel"],
}


@pytest.mark.parametrize("module, name", [(m, n) for m, names in API.items() for n in names])
def test_namespace_function_takes_torchs_parameters(module, name):
    want = inspect.signature(getattr(importlib.import_module(f"torch.{module}"), name)).parameters
    got = inspect.signature(getattr(importlib.import_module(f"engine.{module}"), name)).parameters
    assert list(got) == list(want)
    assert [p.kind for p in got.values()] == [p.kind for p in want.values()]


@pytest.mark.parametrize("name", ["profile", "record_function"])
def test_profiler_classes_take_torchs_parameters(name):
    import torch.profiler

    want = inspect.signature(getattr(torch.profiler, name).__init__).parameters
    got = inspect.signature(getattr(engine.profiler, name).__init__).parameters
    assert list(got) == list(want)


def test_profiler_activities_are_torchs():
    import torch.profiler

    assert list(engine.profiler.ProfilerActivity.__members__) == list(torch.profiler.ProfilerActivity.__members__)


@pytest.mark.parametrize("name", ["L1Unstructured", "RandomUnstructured", "LnStructured", "RandomStructured",
                                  "CustomFromMask", "Identity"])
def test_pruning_methods_take_torchs_parameters(name):
    """The pruning classes: ``__init__`` and the ``apply`` classmethod, as torch's."""
    import torch.nn.utils.prune

    for attr in ("__init__", "apply"):
        want = inspect.signature(getattr(getattr(torch.nn.utils.prune, name), attr)).parameters
        got = inspect.signature(getattr(getattr(engine.nn.utils.prune, name), attr)).parameters
        assert list(got) == list(want), (name, attr)


# torch dtypes the engine does not name: quantized, sub-byte, float8/float4, complex32 and the wide
# unsigned ones (public training code uses none of them; bfloat16 is named, without tensors:
# tests/engine/test_dtype.py)
LACKED_DTYPES = {
    "bit", "bits16", "bits1x8", "bits2x4", "bits4x2", "bits8", "chalf", "complex32", "float4_e2m1fn_x2",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int3",
    "int4", "int5", "int6", "int7", "qint32", "qint8", "quint2x4", "quint4x2", "quint8", "uint1", "uint16", "uint2",
    "uint3", "uint32", "uint4", "uint5", "uint6", "uint64", "uint7",
}


def test_every_torch_dtype_is_named_or_known_lacking():
    names = {n for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype)}
    lacking = {n for n in names if not hasattr(engine, n)}
    assert lacking <= LACKED_DTYPES, f"engine lacks torch dtypes {sorted(lacking - LACKED_DTYPES)}"
    for name in names - lacking:
        d, t = getattr(engine, name), getattr(torch, name)
        assert isinstance(d, engine.dtype) and repr(d) == repr(t).replace("torch.", "engine.")
        assert (d.itemsize, d.is_floating_point, d.is_complex) == (t.itemsize, t.is_floating_point, t.is_complex)
