"""``engine.distributions.relaxed_categorical``: torch's module path for ExpRelaxedCategorical."""

from .relaxed import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
