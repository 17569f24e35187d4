"""Differentiable operations on arrays, grouped by kind; each op carries its own backward."""
