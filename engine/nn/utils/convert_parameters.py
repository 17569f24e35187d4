"""``parameters_to_vector`` / ``vector_to_parameters`` (torch.nn.utils.convert_parameters)."""

from __future__ import annotations

from collections.abc import Iterable

from ..._ops.shape import cat
from ..._tensor import Tensor
from ...optim.optimizer import typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one vector (differentiable)."""
    return cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters' data, in order (the parameters
    then share ``vec``'s memory, as in torch).

    Raises:
        TypeError: ``vec`` is not a tensor.
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
