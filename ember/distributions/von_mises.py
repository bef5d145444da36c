"""The von Mises distribution (torch.distributions.VonMises)."""
import math

from . import _ember as ember
from ember._core.tensor import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    """log I0(x), stable for large x through the exponentially scaled Bessel function."""
    return ember.special.i0e(x).log() + x.abs()


def _log_i1(x):
    return ember.special.i1e(x).log() + x.abs()


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best and Fisher's (1979) rejection sampler: redraws the unaccepted entries of
    ``x`` until all are accepted, then centres the angles on ``loc``."""
    done = ember.zeros(x.shape, dtype=ember.bool)
    while not bool(done.all()):
        u = ember.rand((3,) + tuple(x.shape), dtype=loc.dtype)
        u1, u2, u3 = u.unbind()
        z = ember.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        if bool(accept.any()):
            x = ember.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """A circular von Mises distribution.

    This implementation uses polar coordinates. The ``loc`` and ``value`` args can be any
    real number (to facilitate unconstrained optimization), but are interpreted as angles
    modulo 2 pi.

    Args:
        loc (Tensor): an angle in radians.
        concentration (Tensor): concentration parameter
    """
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = self.loc.shape
        event_shape = Size()
        super().__init__(batch_shape, event_shape, validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * ember.cos(value - self.loc)
        log_prob = log_prob - math.log(2 * math.pi) - _log_i0(self.concentration)
        return log_prob

    @lazy_property
    def _loc(self):
        return self.loc.to(ember.double)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(ember.double)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        _proposal_r = (1 + rho ** 2) / (2 * rho)
        # second order Taylor expansion around 0 for small kappa
        _proposal_r_taylor = 1 / kappa + kappa
        return ember.where(kappa < 1e-5, _proposal_r_taylor, _proposal_r)

    def sample(self, sample_shape=Size()):
        """The von Mises distribution is sampled by rejection, in double precision."""
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            x = ember.empty(shape, dtype=self._loc.dtype)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r,
                                     x).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        try:
            return super().expand(batch_shape)
        except NotImplementedError:
            validate_args = self.__dict__.get("_validate_args")
            loc = self.loc.expand(batch_shape)
            concentration = self.concentration.expand(batch_shape)
            return type(self)(loc, concentration, validate_args=validate_args)

    @property
    def mean(self):
        """The provided mean is the circular one."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The provided variance is the circular one."""
        return 1 - (_log_i1(self.concentration) - _log_i0(self.concentration)).exp()
