"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells, laid out as torch's.

Parameters carry torch's names (``weight_ih_l0``, ``bias_hh_l1_reverse``, ``weight_hr_l0``), shapes
and registration order, so ``state_dict()`` round-trips with torch. Each layer and direction
projects the whole input sequence in one matrix product (``F.linear`` over every time step), then
walks the time steps; each step is a batched ``addmm`` with the recurrent weights followed by the
gate arithmetic, all four LSTM gates (three GRU gates) coming out of that one product. The time
loop is the only Python loop. ``LSTM`` runs each layer and direction as one op
(``_functional.fused_rnn.lstm_layer``, node ``MkldnnRnnLayerBackward0``, as torch's CPU LSTM:
per-op bookkeeping would cost more than the arithmetic), or with ``proj_size`` and packed input
step by step with the step's gate arithmetic as one fused op; ``GRU``, ``RNN`` and the cells
record it op by op, as torch's CPU code does, so their graphs show torch's nodes.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import engine._ops.shape as _shape
import engine.nn.functional as F
import engine.nn.init as init

from ..._creation import empty, zeros
from ..._tensor import Tensor
from .._functional._utils import legacy_type_name, shape_str
from .._functional.fused_rnn import fused_lstm_cell, lstm_layer
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}

# A step maps (input projection of x_t, state, w_hh, b_hh, w_hr) to the new state; state[0] is
# the step's output h_t. The state is (h,) for RNN/GRU and (h, c) for LSTM.
State = tuple[Tensor, ...]
Step = Callable[[Tensor, State, Tensor, Tensor | None, Tensor | None], State]


# --- one time step, vectorised over the batch ---------------------------------------------------

def _rnn_tanh_step(igates: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    return ((F.linear(state[0], w_hh, b_hh) + igates).tanh(),)


def _rnn_relu_step(igates: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    return (F.relu(F.linear(state[0], w_hh, b_hh) + igates),)


def _lstm_step(igates: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    """torch's LSTMCell: gates (i, f, g, o) from one product; c' = f·c + i·g, h' = o·tanh(c'),
    projected by ``w_hr`` when the LSTM has ``proj_size``."""
    h, c = state
    i, f, g, o = (F.linear(h, w_hh, b_hh) + igates).unsafe_chunk(4, 1)  # (as torch: UnsafeSplitBackward0)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_step(igates: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    """torch's GRUCell: r, z from the summed products, n = tanh(x_n + r·h_n), h' = (h - n)·z + n."""
    h = state[0]
    i_r, i_z, i_n = igates.unsafe_chunk(3, 1)  # (as torch: its node is UnsafeSplitBackward0)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).unsafe_chunk(3, 1)
    reset = (h_r + i_r).sigmoid()
    update = (h_z + i_z).sigmoid()
    new = (i_n + h_n * reset).tanh()
    return ((h - new) * update + new,)


def _fused_lstm_step(igates: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None,
                     w_hr: Tensor | None) -> State:
    """``_lstm_step`` with its gate arithmetic as one op (see ``_functional.fused_rnn``)."""
    h, c = fused_lstm_cell(igates, F.linear(state[0], w_hh, b_hh), state[1])
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


# the layers' steps. LSTM's gate arithmetic is one op, as torch's CPU nn.LSTM is one node per layer;
# GRU, RNN and the cells record op by op, as torch's CPU code does (torch's GRU graph shows its
# Add/Mul/Sigmoid nodes: a fused GRU step would draw, and diff, a graph torch never makes)
_STEPS: dict[str, Step] = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _fused_lstm_step,
                           "GRU": _gru_step}


def _run_direction(x: Tensor, state: State, weights: Sequence[Tensor | None], step: Step,
                   reverse: bool) -> tuple[Tensor, State]:
    """One layer, one direction over a (T, N, H_in) sequence: the input projection of every
    step in one product, then the recurrence. Returns the (T, N, H_out) outputs (in time order
    for both directions) and the final state."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    if step is _fused_lstm_step and w_hr is None:  # a whole LSTM layer is one op, as torch's CPU LSTM
        out, h, c = lstm_layer(x, state[0], state[1], w_ih, w_hh, b_ih, b_hh, reverse)
        return out, (h, c)
    igates = F.linear(x, w_ih, b_ih).unbind(0)
    outputs: list[Tensor] = [None] * len(igates)  # type: ignore[list-item]
    for t in reversed(range(len(igates))) if reverse else range(len(igates)):
        state = step(igates[t], state, w_hh, b_hh, w_hr)
        outputs[t] = state[0]
    return _shape.stack(outputs, 0), state


def _run_packed(data: Tensor, batch_sizes: list[int], state: State, weights: Sequence[Tensor | None],
                step: Step) -> tuple[Tensor, State]:
    """One layer, forward direction, over packed ``data`` (torch's PackedLayer): at each step
    the rows of the sequences that have ended leave the running state; their last states are
    the final ones. Returns the packed outputs and the final state in sorted batch order."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    igates = F.linear(data, w_ih, b_ih)
    outputs, done, offset, last = [], [], 0, batch_sizes[0]
    for bs in batch_sizes:
        if bs < last:
            done.append(tuple(s[bs:last] for s in state))
            state = tuple(s[:bs] for s in state)
        last = bs
        state = step(igates[offset:offset + bs], state, w_hh, b_hh, w_hr)
        offset += bs
        outputs.append(state[0])
    done.append(state)
    done.reverse()
    final = tuple(_shape.cat([d[k] for d in done], 0) if len(done) > 1 else done[0][k] for k in range(len(state)))
    return _shape.cat(outputs, 0), final


def _run_packed_reverse(data: Tensor, batch_sizes: list[int], state: State, weights: Sequence[Tensor | None],
                        step: Step) -> tuple[Tensor, State]:
    """One layer, reverse direction, over packed ``data`` (torch's ReversedPackedLayer): from
    the last step back, each sequence joins (with its initial state) at its own last step."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    igates = F.linear(data, w_ih, b_ih)
    initial, last = state, batch_sizes[-1]
    state = tuple(s[:last] for s in initial)
    outputs, offset = [], data.size(0)
    for bs in reversed(batch_sizes):
        if bs > last:
            state = tuple(_shape.cat([s, s0[last:bs]], 0) for s, s0 in zip(state, initial))
        state = step(igates[offset - bs:offset], state, w_hh, b_hh, w_hr)
        offset -= bs
        last = bs
        outputs.append(state[0])
    outputs.reverse()
    return _shape.cat(outputs, 0), state


def _mini_batch(layer: Module, input: Tensor, batch_sizes: Tensor | None) -> int:  # noqa: A002
    if batch_sizes is not None:
        return int(batch_sizes[0])
    return input.size(0) if layer.batch_first else input.size(1)


def _shape_error(cls: type[Exception], message: str, layer: Module, what: str, expected: str,
                 got: Sequence[int]) -> Exception:
    """torch's ``message``, extended as the nn layers extend theirs: naming the layer and both
    shapes."""
    return cls(f"{message}: {layer!r} expects {what} of shape {expected} but got {what} of shape {shape_str(got)}")


def _check_matmul_dtype(t: Tensor, weight: Tensor) -> None:
    """The error torch's ``addmm`` raises when an input or hidden state is not the weights' dtype."""
    if t.dtype != weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {legacy_type_name(t._data.dtype)} "
                           f"and {legacy_type_name(weight._data.dtype)}")


# --- multi-layer modules ------------------------------------------------------------------------

class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: parameters per layer and direction, shape checks,
    and the layer/direction loop.

    For layer ``k`` and direction suffix ``''`` or ``'_reverse'`` it registers
    ``weight_ih_l{k}`` (gates·hidden, input), ``weight_hh_l{k}`` (gates·hidden, hidden),
    ``bias_ih_l{k}``, ``bias_hh_l{k}`` (when ``bias``) and ``weight_hr_l{k}`` (LSTM with
    ``proj_size``), in that order, all drawn from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``.
    ``_flat_weights`` always lists the current parameters in that order.
    """

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _validate_rnn_args(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(2 if bidirectional else 1):
                self._add_layer_params(layer, direction, device, dtype)
        self._init_flat_weights()
        self.reset_parameters()

    def _add_layer_params(self, layer: int, direction: int, device: Any, dtype: Any) -> None:
        gate_size = _GATES[self.mode] * self.hidden_size
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        num_directions = 2 if self.bidirectional else 1
        layer_input = self.input_size if layer == 0 else real_hidden * num_directions
        shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, real_hidden)}
        if self.bias:
            shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
        if self.proj_size > 0:
            shapes["weight_hr"] = (self.proj_size, self.hidden_size)
        suffix = "_reverse" if direction == 1 else ""
        names = []
        for kind, shape in shapes.items():
            name = f"{kind}_l{layer}{suffix}"
            setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
            names.append(name)
        self._flat_weights_names.extend(names)
        self._all_weights.append(names)

    def _init_flat_weights(self) -> None:
        self._flat_weights = [getattr(self, n) if hasattr(self, n) else None for n in self._flat_weights_names]

    def __setattr__(self, attr: str, value: Any) -> None:
        # Keep _flat_weights in step when a weight is reassigned (``rnn.weight_hh_l0 = ...``).
        if "_flat_weights" in self.__dict__ and attr in self._flat_weights_names:
            self._flat_weights[self._flat_weights_names.index(attr)] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self) -> None:
        """A no-op kept for torch compatibility (torch packs the weights for cuDNN here)."""

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> RNNBase:
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()
        return ret

    def reset_parameters(self) -> None:
        """Draw every parameter from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters grouped per layer and direction, as torch lists them."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    # --- checks (torch's order and messages) ---------------------------------------------------

    def check_input(self, input: Tensor, batch_sizes: Tensor | None = None) -> None:  # noqa: A002
        """Raise ``ValueError`` for a dtype other than the weights', ``RuntimeError`` for a
        batched input that is not 3-D or whose last dim is not ``input_size`` (torch's messages)."""
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})"
            )
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None = None) -> tuple[int, int, int]:  # noqa: A002
        """``(num_layers * num_directions, batch, proj_size or hidden_size)``."""
        mini_batch = _mini_batch(self, input, batch_sizes)
        num_directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, real_hidden)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """``RuntimeError`` with torch's ``msg`` when ``hx`` has another shape."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None = None) -> None:  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:
        """``hx`` with its batch dim (1) reordered by ``permutation`` (a packed batch's sort
        order); ``hx`` itself when there is none."""
        if permutation is None:
            return hx
        if isinstance(hx, tuple):
            return tuple(h.index_select(1, permutation) for h in hx)
        return hx.index_select(1, permutation)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # --- the computation ----------------------------------------------------------------------

    def _forward(self, input: Tensor, hx: Any) -> tuple[Tensor, Any]:  # noqa: A002
        """torch's forward for a plain (not packed) input: rank checks, a batch dim of 1 for
        unbatched input, zero initial states, the size checks, the layers. ``hx`` is a Tensor
        (RNN, GRU) or an (h, c) pair (LSTM), and so is the returned final state."""
        self._init_flat_weights()  # the current parameters, however they were replaced
        pair = self.mode == "LSTM"
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.dim() not in (2, 3):
            raise ValueError(self._rank_message(input.dim()))
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        given = (input.shape, None if hx is None else [h.shape for h in (hx if pair else (hx,))])
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if hx is None:
            states = self._zero_states(input)
        else:
            states = tuple(hx) if pair else (hx,)
            if any(h.dim() != (3 if is_batched else 2) for h in states):
                raise RuntimeError(_hx_rank_message(states, is_batched, pair))
            if not is_batched:
                states = tuple(h.unsqueeze(1) for h in states)
        try:
            self.check_forward_args(input, states if pair else states[0])
        except RuntimeError as err:
            raise self._extended(err, input, is_batched, given) from None
        output, states = self._run(input, states)
        if not is_batched:
            output = output.squeeze(batch_dim)
            states = tuple(h.squeeze(1) for h in states)
        return output, (states if pair else states[0])

    def _forward_packed(self, packed: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """torch's forward for a PackedSequence: initial states in the packed (sorted) batch
        order, each sequence run to its own length, the output packed as the input, the final
        states (each sequence's own last step) back in the caller's batch order."""
        pair = self.mode == "LSTM"
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        if hx is None:
            states = self._zero_states(data, batch_sizes)
        else:
            states = tuple(self.permute_hidden(tuple(hx) if pair else hx, sorted_indices)) if pair else \
                (self.permute_hidden(hx, sorted_indices),)
        self.check_forward_args(data, states if pair else states[0], batch_sizes)
        _check_matmul_dtype(states[0], self._flat_weights[0])
        output, states = self._run_layers(data, states, [int(b) for b in batch_sizes._data])
        states = tuple(self.permute_hidden(states, unsorted_indices))
        out = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
        return out, (states if pair else states[0])

    def _rank_message(self, ndim: int) -> str:
        return f"{type(self).__name__}: Expected input to be 2D or 3D, got {ndim}D instead"

    def _zero_states(self, input: Tensor, batch_sizes: Tensor | None = None) -> State:  # noqa: A002
        h_shape = self.get_expected_hidden_size(input, batch_sizes)
        if self.mode != "LSTM":
            return (zeros(*h_shape, dtype=input.dtype),)
        c_shape = h_shape[:2] + (self.hidden_size,)
        return zeros(*h_shape, dtype=input.dtype), zeros(*c_shape, dtype=input.dtype)

    def _extended(self, err: RuntimeError, input: Tensor, is_batched: bool,  # noqa: A002
                  given: tuple) -> RuntimeError:
        """torch's size error extended with the layer and both shapes as the caller gave them
        (unbatched shapes stay unbatched)."""
        message = str(err)
        if message.startswith("input.size(-1)"):
            layout = ("N, L, " if self.batch_first else "L, N, ") if is_batched else "L, "
            return _shape_error(RuntimeError, message, self, "input", f"({layout}{self.input_size})", given[0])
        expected = self.get_expected_hidden_size(input)
        k = 1 if message.startswith("Expected hidden[1]") else 0
        if k == 1:
            expected = expected[:2] + (self.hidden_size,)
        what = "hx" if self.mode != "LSTM" else f"hx[{k}]"
        if not is_batched:
            expected = (expected[0], expected[2])
        return _shape_error(RuntimeError, message, self, what, str(expected), given[1][k])

    def _run(self, input: Tensor, hx: State) -> tuple[Tensor, State]:  # noqa: A002
        """Every layer and direction over a batched input; ``hx`` holds the initial states
        stacked over (layer, direction). Returns the last layer's outputs and the final
        states stacked the same way."""
        x = input.transpose(0, 1) if self.batch_first else input
        if x.size(0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        _check_matmul_dtype(hx[0], self._flat_weights[0])
        output, states = self._run_layers(x, hx, None)
        return (output.transpose(0, 1) if self.batch_first else output), states

    def _run_layers(self, x: Tensor, hx: State, batch_sizes: list[int] | None) -> tuple[Tensor, State]:
        """The layers over a time-major (T, N, H) input, or over packed data (``batch_sizes``
        given): the last layer's outputs and the final states stacked over (layer, direction)."""
        step = _STEPS[self.mode]
        num_directions = 2 if self.bidirectional else 1
        initial = [s.unbind(0) for s in hx]
        finals: list[State] = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                state = tuple(s[idx] for s in initial)
                if batch_sizes is None:
                    out, state = _run_direction(x, state, self._layer_weights(idx), step, reverse=direction == 1)
                else:
                    run = _run_packed_reverse if direction == 1 else _run_packed
                    out, state = run(x, batch_sizes, state, self._layer_weights(idx), step)
                outputs.append(out)
                finals.append(state)
            x = _shape.cat(outputs, -1) if num_directions == 2 else outputs[0]
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, tuple(_shape.stack([f[k] for f in finals], 0) for k in range(len(hx)))

    def _layer_weights(self, idx: int) -> tuple[Tensor | None, ...]:
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of one layer and direction, None where absent."""
        by_kind = {name.rsplit("_l", 1)[0]: getattr(self, name) for name in self._all_weights[idx]}
        return tuple(by_kind.get(k) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))


def _hx_rank_message(states: State, is_batched: bool, pair: bool) -> str:
    kind = "batched 3-D" if is_batched else "unbatched 2-D"
    want = "3-D" if is_batched else "2-D"
    if pair:
        return (f"For {kind} input, hx and cx should also be {want} but got ({states[0].dim()}-D, "
                f"{states[1].dim()}-D) tensors")
    return f"For {kind} input, hx should also be {want} but got {states[0].dim()}-D tensor"


def _validate_rnn_args(mode: str, input_size: Any, hidden_size: Any, num_layers: int, bias: Any, batch_first: Any,
                       dropout: Any, proj_size: int) -> None:
    """torch's constructor checks, in torch's order."""
    if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                         "being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                      f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                      stacklevel=4)
    for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                              ("input_size", input_size, int)):
        if not isinstance(value, kind):
            raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
        if name == "input_size" and value <= 0:
            raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")
    if mode not in _GATES:
        raise ValueError("Unrecognized RNN mode: " + mode)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU), stacked
    ``num_layers`` deep, optionally bidirectional.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``. ``forward(input, hx=None)`` takes ``(L, N, H_in)``
    (``(N, L, H_in)`` with ``batch_first``) or unbatched ``(L, H_in)`` input and returns
    ``(output, h_n)``: the last layer's ``h_t`` for every ``t`` (directions concatenated) and
    the final state of every layer and direction, ``(num_layers * num_directions, N, H_out)``.
    An input or state of the wrong size raises torch's ``RuntimeError`` extended with the layer
    and both shapes.

    Example::

        >>> rnn = engine.nn.RNN(10, 20, 2)
        >>> output, hn = rnn(engine.randn(5, 3, 10), engine.randn(2, 3, 20))
        >>> output.shape, hn.shape
        (engine.Size([5, 3, 20]), engine.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
        return self._forward(input, hx)

    def _rank_message(self, ndim: int) -> str:
        return f"RNN: Expected input to be 2D or 3D, got {ndim}D tensor instead"


class LSTM(RNNBase):
    """Long short-term memory: per step, gates ``i, f, g, o`` from one product,
    ``c_t = f ⊙ c_{t-1} + i ⊙ g`` and ``h_t = o ⊙ tanh(c_t)`` (times ``W_hr^T`` with ``proj_size``).

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0)``. ``forward(input, (h_0, c_0)=None)`` returns
    ``(output, (h_n, c_n))`` with torch's shapes; ``h`` has ``proj_size`` features when set.

    Example::

        >>> lstm = engine.nn.LSTM(10, 20, 2)
        >>> output, (hn, cn) = lstm(engine.randn(5, 3, 10))
        >>> output.shape, cn.shape
        (engine.Size([5, 3, 20]), engine.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Tensor | None = None) -> tuple[int, int, int]:  # noqa: A002
        """``(num_layers * num_directions, batch, hidden_size)``."""
        mini_batch = _mini_batch(self, input, batch_sizes)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: tuple[Tensor, Tensor],  # type: ignore[override]  # noqa: A002
                           batch_sizes: Tensor | None = None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None  # noqa: A002
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        return self._forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit: ``r, z = σ(...)``, ``n = tanh(x W_in^T + b_in + r ⊙ (h W_hn^T + b_hn))``,
    ``h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}``; arguments and outputs as ``RNN``'s.

    Example::

        >>> gru = engine.nn.GRU(10, 20, 2)
        >>> output, hn = gru(engine.randn(5, 3, 10))
        >>> hn.shape
        engine.Size([2, 3, 20])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
        return self._forward(input, hx)


# --- cells --------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """What the cells share: ``weight_ih`` (chunks·hidden, input), ``weight_hh`` (chunks·hidden,
    hidden) and, with ``bias``, ``bias_ih`` and ``bias_hh``, all from
    ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``; rank, size and dtype checks in torch's
    order, size errors extended with the layer and both shapes."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Draw every parameter from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _cell_forward(self, step: Step | None, input: Tensor, hx: Any, pair: bool) -> Any:  # noqa: A002
        """Rank checks, a batch dim of 1 for unbatched input, zero states, size and dtype checks
        (torch's order), one step. ``hx`` and the result are a Tensor, or an (h, c) pair; a None
        ``step`` is an unknown nonlinearity, reported where torch reports it."""
        name = type(self).__name__
        states = None if hx is None else (tuple(hx) if pair else (hx,))
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for k, h in enumerate(states or ()):
            if h.dim() not in (1, 2):
                label = f"hx[{k}]" if pair else "hidden"
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D instead")
        is_batched = input.dim() == 2
        given = (input.shape, [h.shape for h in states or ()])
        if not is_batched:
            input = input.unsqueeze(0)
        if states is None:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype)
            states = (z, z) if pair else (z,)
        elif not is_batched:
            states = tuple(h.unsqueeze(0) for h in states)
        if step is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check_sizes(input, states, is_batched, given, pair)
        _check_matmul_dtype(input, self.weight_ih)
        _check_matmul_dtype(states[0], self.weight_hh)
        out = step(F.linear(input, self.weight_ih, self.bias_ih), states, self.weight_hh, self.bias_hh, None)
        if not is_batched:
            out = tuple(h.squeeze(0) for h in out)
        return out if pair else out[0]

    def _check_sizes(self, input: Tensor, states: State, is_batched: bool, given: tuple, pair: bool) -> None:  # noqa: A002
        """torch's cell checks on the batched forms; the extension shows the shapes as given."""
        if input.size(1) != self.input_size:
            raise _shape_error(RuntimeError, f"input has inconsistent input_size: got {input.size(1)} expected "
                               f"{self.input_size}", self, "input",
                               f"(N, {self.input_size})" if is_batched else f"({self.input_size})", given[0])
        expected = f"({input.size(0)}, {self.hidden_size})" if is_batched else f"({self.hidden_size})"
        for k, h in enumerate(states):
            what = f"hx[{k}]" if pair else "hx"
            if input.size(0) != h.size(0):
                raise _shape_error(RuntimeError, f"Input batch size {input.size(0)} doesn't match hidden{k} batch "
                                   f"size {h.size(0)}", self, what, expected, given[1][k])
            if h.size(1) != self.hidden_size:
                raise _shape_error(RuntimeError, f"hidden{k} has inconsistent hidden_size: got {h.size(1)}, expected "
                                   f"{self.hidden_size}", self, what, expected, given[1][k])


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU).

    ``forward(input, hx=None)`` takes ``(N, H_in)`` or unbatched ``(H_in)`` input and a state of
    the matching rank (zeros when omitted) and returns ``h'``.

    Example::

        >>> cell = engine.nn.RNNCell(10, 20)
        >>> cell(engine.randn(3, 10)).shape
        engine.Size([3, 20])
    """

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        steps = {"tanh": _rnn_tanh_step, "relu": _rnn_relu_step}
        return self._cell_forward(steps.get(self.nonlinearity), input, hx, pair=False)


class LSTMCell(RNNCellBase):
    """One LSTM step with the four gates from one product: returns ``(h', c')``.

    ``forward(input, (h, c)=None)`` takes ``(N, H_in)`` or unbatched ``(H_in)`` input.

    Example::

        >>> cell = engine.nn.LSTMCell(10, 20)
        >>> h, c = cell(engine.randn(3, 10))
        >>> h.shape
        engine.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None  # noqa: A002
                ) -> tuple[Tensor, Tensor]:
        return self._cell_forward(_lstm_step, input, hx, pair=True)


class GRUCell(RNNCellBase):
    """One GRU step: returns ``h'``; arguments as ``RNNCell``'s.

    Example::

        >>> cell = engine.nn.GRUCell(10, 20)
        >>> cell(engine.randn(3, 10)).shape
        engine.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        return self._cell_forward(_gru_step, input, hx, pair=False)
