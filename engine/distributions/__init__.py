"""engine.distributions (torch.distributions): the distributions training code samples from and
scores with -- Categorical/OneHotCategorical and Bernoulli (policy gradients, classifiers),
Normal/Independent/MultivariateNormal (VAEs, Gaussian policies), Uniform, Laplace, Exponential,
Gamma, Beta, Dirichlet, LogNormal and TransformedDistribution with elementwise ``transforms``
(Exp, Affine, Sigmoid, Tanh, Abs), the counts Binomial/Poisson/Geometric/NegativeBinomial,
StudentT/Cauchy/HalfNormal/HalfCauchy/Gumbel, the Gumbel-softmax relaxations, MixtureSameFamily
and LowRankMultivariateNormal -- with ``kl_divergence``, ``register_kl``, ``expand`` and
``enumerate_support``.

Like torch's, they are written with ordinary tensor ops, so log_prob/entropy/rsample
differentiate through the usual autograd graph. Parameters and the values given to
log_prob/cdf are validated as torch validates them by default (ValueError with torch's
messages; ``validate_args=False`` or ``Distribution.set_default_validate_args(False)`` turns it
off). One file per family; ``engine.distributions.X`` imports work as torch's. Gamma, Beta and
Dirichlet ``rsample`` with torch's implicit reparameterisation gradients (see ``gamma.py``).
"""

from __future__ import annotations

import engine.distributions.constraints as constraints
import engine.distributions.relaxed_bernoulli as relaxed_bernoulli
import engine.distributions.relaxed_categorical as relaxed_categorical
import engine.distributions.transforms as transforms

from .bernoulli import Bernoulli
from .categorical import Categorical, OneHotCategorical
from .discrete import Binomial, Geometric, NegativeBinomial, Poisson
from .distribution import Distribution, ExponentialFamily
from .gamma import Beta, Dirichlet, Exponential, Gamma
from .heavy_tailed import Cauchy, Chi2, Gumbel, HalfCauchy, HalfNormal, StudentT
from .independent import Independent
from .kl import kl_divergence, register_kl
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import Laplace, Normal
from .relaxed import RelaxedBernoulli, RelaxedOneHotCategorical
from .transformed_distribution import LogNormal, TransformedDistribution
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Dirichlet", "Distribution",
           "Chi2", "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Gumbel", "HalfCauchy",
           "HalfNormal", "Independent", "Laplace", "LogNormal", "LowRankMultivariateNormal",
           "MixtureSameFamily", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical", "Poisson",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Uniform",
           "constraints", "kl_divergence", "register_kl", "relaxed_bernoulli", "relaxed_categorical",
           "transforms"]
