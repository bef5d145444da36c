"""The Chi-squared distribution (torch.distributions.Chi2)."""
from ember._core.tensor import Size

from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Creates a Chi-squared distribution parameterized by shape parameter ``df``:
    exactly ``Gamma(alpha=0.5*df, beta=0.5)``.

    Args:
        df (float or Tensor): shape parameter of the distribution
    """
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(Size(batch_shape), new)

    @property
    def df(self):
        return self.concentration * 2
