"""Edge cases against torch: boundary parameters (p = 0 or 1, rate 0), values outside the
support with validation off, scalar parameters, the utils helpers, degenerate modes,
cdf/icdf of transformed families, expand of scalar and Independent distributions."""
import numpy as np
import pytest
import torch

import ember


def _try(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - the exception type is compared
        return type(e).__name__


CASES = {
    "bern_scalar": lambda L, D: D.Bernoulli(0.3).log_prob(L.tensor(1.0)),
    "cat_lp": lambda L, D: D.Categorical(L.tensor([0.1, 0.6, 0.3])).log_prob(L.tensor([0, 2, 1])),
    "cat_entropy_zero": lambda L, D: D.Categorical(L.tensor([0.0, 0.5, 0.5])).entropy(),
    "binom_lp_int": lambda L, D: (
        D.Binomial(10, L.tensor([0.3, 0.5]))
        .log_prob(L.tensor([3.0, 10.0]))),
    "binom_p0": lambda L, D: D.Binomial(10, L.tensor([0.0, 1.0])).log_prob(L.tensor([0.0, 10.0])),
    "pois_lp": lambda L, D: D.Poisson(L.tensor([0.0, 2.0])).log_prob(L.tensor([0.0, 3.0])),
    "geom_p1": lambda L, D: D.Geometric(L.tensor([1.0, 0.5])).log_prob(L.tensor([0.0, 2.0])),
    "exp_cdf": lambda L, D: D.Exponential(2.0).cdf(L.tensor([0.5, 1.0])),
    "normal_icdf": lambda L, D: D.Normal(0.0, 1.0).icdf(L.tensor([0.0, 0.5, 1.0])),
    "unif_lp_out": lambda L, D: (
        D.Uniform(0.0, 1.0, validate_args=False)
        .log_prob(L.tensor([-1.0, 0.5, 1.0]))),
    "halfnormal_neg": lambda L, D: (
        D.HalfNormal(1.0, validate_args=False)
        .log_prob(L.tensor([-1.0, 1.0]))),
    "lowrank_var": lambda L, D: (
        D.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.ones(2))
        .variance),
    "multinom_lp": lambda L, D: (
        D.Multinomial(probs=L.tensor([0.2, 0.8]), validate_args=False)
        .log_prob(L.tensor([3.0, 4.0]))),
    "dir_mode_small": lambda L, D: D.Dirichlet(L.tensor([0.5, 0.3, 0.7])).mode,
    "utils_p2l": lambda L, D: D.utils.probs_to_logits(L.tensor([0.0, 0.5, 1.0]), is_binary=True),
    "utils_l2p": lambda L, D: D.utils.logits_to_probs(L.tensor([[0.0, 0.5, 1.0]])),
    "utils_clamp": lambda L, D: D.utils.clamp_probs(L.tensor([0.0, 1.0])),
    "tril_vec": lambda L, D: D.utils.tril_matrix_to_vec(L.arange(16.).reshape(4, 4), diag=1),
    "vec_tril": lambda L, D: D.utils.vec_to_tril_matrix(L.arange(6.), diag=0),
    "vec_tril_m1": lambda L, D: D.utils.vec_to_tril_matrix(L.arange(6.), diag=-1),
    "nb_mode": lambda L, D: D.NegativeBinomial(L.tensor([3.0]), logits=L.tensor([0.5])).mode,
    "cb_mode": lambda L, D: D.ContinuousBernoulli(L.tensor([0.3])).stddev,
    "gamma_cdf": lambda L, D: D.Gamma(L.tensor([2.0]), L.tensor([3.0])).cdf(L.tensor([0.4])),
    "weibull_cdf": lambda L, D: D.Weibull(L.tensor([2.0]), L.tensor([3.0])).cdf(L.tensor([0.4])),
    "lognormal_cdf": lambda L, D: D.LogNormal(0.0, 1.0).cdf(L.tensor([0.4])),
    "pareto_icdf": lambda L, D: D.Pareto(L.tensor([2.0]), L.tensor([3.0])).icdf(L.tensor([0.4])),
    "kumar_cdf": lambda L, D: (
        _try(lambda: D.Kumaraswamy(L.tensor([2.0]), L.tensor([3.0]))
        .cdf(L.tensor([0.4])))),
    "invgamma_cdf": lambda L, D: (
        D.InverseGamma(L.tensor([2.0]), L.tensor([3.0]))
        .cdf(L.tensor([0.4]))),
    "halfcauchy_icdf": lambda L, D: D.HalfCauchy(2.0).icdf(L.tensor([0.4])),
    "gumbel_cdf": lambda L, D: D.Gumbel(0.0, 2.0).cdf(L.tensor([0.4])),
    "chi2_df": lambda L, D: D.Chi2(L.tensor([3.0])).df,
    "studentt_mean1": lambda L, D: D.StudentT(L.tensor([1.0, 1.5, 3.0])).variance,
    "perp": lambda L, D: D.Normal(0.0, 1.0).perplexity(),
    "onehot_enum": lambda L, D: D.OneHotCategorical(L.tensor([0.2, 0.8])).enumerate_support(),
    "bern_enum_noexp": lambda L, D: D.Bernoulli(L.tensor([[0.2, 0.8]])).enumerate_support(False),
    "expand_scalar": lambda L, D: D.Normal(0.0, 1.0).expand([3]).log_prob(L.tensor(0.0)),
    "ind_expand": lambda L, D: (
        D.Independent(D.Normal(L.zeros(2, 3), L.ones(2, 3)), 1)
        .expand([4, 2]).batch_shape),
    "mix_cdf": lambda L, D: (
        D.MixtureSameFamily(D.Categorical(L.tensor([0.5, 0.5])),
                            D.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, 1.0])))
        .cdf(L.tensor([0.3]))),
    "td_cdf_decreasing": lambda L, D: (
        D.TransformedDistribution(D.Normal(0.0, 1.0), [D.transforms.AffineTransform(0.0, -2.0)])
        .cdf(L.tensor([0.5]))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_edge_case_matches_torch(name):
    x = CASES[name](ember, ember.distributions)
    y = CASES[name](torch, torch.distributions)
    if isinstance(x, str) or isinstance(y, str):
        assert x == y
    elif isinstance(y, torch.Size):
        assert tuple(x) == tuple(y)
    else:
        xn, yn = x.detach().numpy(), y.detach().numpy()
        assert xn.shape == yn.shape and xn.dtype == yn.dtype
        np.testing.assert_allclose(xn, yn, rtol=1e-5, atol=1e-7, equal_nan=True)
