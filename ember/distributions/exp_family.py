"""Exponential families (torch.distributions.ExponentialFamily)."""
from . import _ember as ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """ExponentialFamily is the abstract base class for distributions of the form

    p_F(x; theta) = exp(<t(x), theta> - F(theta) + k(x))

    with natural parameters theta, sufficient statistic t(x), log normalizer F(theta) and
    carrier measure k(x).  Its entropy and the KL divergence between two members of one
    family follow from the Bregman divergence of the log normalizer, by autograd.
    """

    @property
    def _natural_params(self):
        """A tuple of tensors: the natural parameters of the distribution."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normalizer F(theta) as a function of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """The expected carrier measure E[k(x)], needed for the entropy."""
        raise NotImplementedError

    def entropy(self):
        """Entropy by the Bregman divergence of the log normalizer."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with ember.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
