"""The sampling operators the distributions use (Gamma and Binomial draws), declared in
ember.ops.distributions."""
from ..ops.distributions import (BINOMIAL, GAMMA_GRAD, STANDARD_GAMMA, binomial,  # noqa: F401
                                 standard_gamma)
