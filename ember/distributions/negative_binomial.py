"""The NegativeBinomial distribution (torch.distributions.NegativeBinomial)."""
from . import _ember as ember
import ember.nn.functional as F
from ember._core.tensor import Size

from . import constraints
from ._count_params import expand_count_and_param, init_count_and_param
from .distribution import Distribution
from .gamma import Gamma
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """Creates a Negative Binomial distribution: the number of successful independent and
    identical Bernoulli trials before ``total_count`` failures are achieved; the probability
    of success of each trial is ``probs``.

    Args:
        total_count (float or Tensor): non-negative number of negative Bernoulli trials to
            stop, although the distribution is still valid for real valued count
        probs (Tensor): Event probabilities of success in the half open interval [0, 1)
        logits (Tensor): Event log-odds for probabilities of success
    """
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        batch_shape = init_count_and_param(self, total_count, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_count_and_param(self, NegativeBinomial, batch_shape, _instance)

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape

    @lazy_property
    def _gamma(self):
        # a Gamma-Poisson mixture: the rate is Gamma(total_count, exp(-logits))
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=Size()):
        with ember.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return ember.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * F.logsigmoid(-self.logits)
                                 + value * F.logsigmoid(self.logits))
        log_normalization = (-ember.lgamma(self.total_count + value)
                             + ember.lgamma(1.0 + value) + ember.lgamma(self.total_count))
        # the normalization is 0 when total_count == value == 0
        log_normalization = log_normalization.masked_fill(
            self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
