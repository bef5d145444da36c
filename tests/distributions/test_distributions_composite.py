"""Compositions real programs build: tanh-squashed Gaussians with a cached transform
(SAC), mixtures of multivariate components, Independent over batched Normals, and
REINFORCE-style score-function gradients."""
import numpy as np
import torch

import ember


def test_tanh_squashed_normal_uses_the_cache():
    loc = np.array([0.3, -0.5, 4.0])
    scale = np.array([0.5, 1.0, 2.0])
    out = {}
    for L in (ember, torch):
        D = L.distributions
        lt = L.tensor(loc, requires_grad=True)
        d = D.TransformedDistribution(D.Normal(lt, L.tensor(scale)),
                                      [D.transforms.TanhTransform(cache_size=1)])
        # the same pre-tanh point for both libraries
        x = L.tensor([0.1, 2.0, 25.0], dtype=L.float64)
        y = d.transforms[0](x)
        lp = d.log_prob(y)
        lp.sum().backward()
        out[L.__name__] = (lp.detach().numpy(), lt.grad.numpy())
    # 25.0 squashes to exactly 1.0: only the cache recovers the pre-image
    assert np.isfinite(out["ember"][0]).all()
    np.testing.assert_allclose(out["ember"][0], out["torch"][0], rtol=1e-8)
    np.testing.assert_allclose(out["ember"][1], out["torch"][1], rtol=1e-8)


def test_mixture_of_multivariate_normals():
    r = np.random.default_rng(3)
    logits, locs = r.standard_normal(4), r.standard_normal((4, 2))
    a = r.standard_normal((4, 2, 2))
    covs = a @ np.swapaxes(a, -1, -2) + np.eye(2)
    x = r.standard_normal((5, 2))
    res = {}
    for L in (ember, torch):
        D = L.distributions
        t = lambda v: L.tensor(v, dtype=L.float64)  # noqa: E731
        mix = D.MixtureSameFamily(D.Categorical(logits=t(logits)),
                                  D.MultivariateNormal(t(locs), covariance_matrix=t(covs)))
        res[L.__name__] = (mix.log_prob(t(x)).numpy(), mix.mean.numpy(), mix.variance.numpy(),
                           tuple(mix.batch_shape), tuple(mix.event_shape))
        ember.manual_seed(0)
        if L is ember:
            assert tuple(mix.sample((3,)).shape) == (3, 2)
    for e, t in zip(res["ember"], res["torch"]):
        if isinstance(e, tuple):
            assert e == t
        else:
            np.testing.assert_allclose(e, t, rtol=1e-8)


def test_mixture_sample_statistics():
    D = ember.distributions
    mix = D.MixtureSameFamily(D.Categorical(probs=ember.tensor([0.3, 0.7])),
                              D.Normal(ember.tensor([-2.0, 3.0]), ember.tensor([0.5, 1.0])))
    ember.manual_seed(1)
    s = mix.sample((40000,)).numpy()
    assert abs(s.mean() - float(mix.mean)) < 0.05
    assert abs(s.var() - float(mix.variance)) / float(mix.variance) < 0.03
    assert abs((s < 0).mean() - 0.3) < 0.01


def test_reinforce_score_function_gradient():
    """E[f(a)] gradient via log_prob(a) * f(a) matches the exact gradient of sum p_i f_i."""
    logits = ember.tensor([0.2, -0.4, 1.0], requires_grad=True)
    f = ember.tensor([1.0, 3.0, -2.0])
    d = ember.distributions.Categorical(logits=logits)
    ember.manual_seed(5)
    a = d.sample((60000,))
    (d.log_prob(a) * f[a]).mean().backward()
    lt = torch.tensor([0.2, -0.4, 1.0], requires_grad=True)
    (torch.softmax(lt, -1) * torch.tensor([1.0, 3.0, -2.0])).sum().backward()
    np.testing.assert_allclose(logits.grad.numpy(), lt.grad.numpy(), atol=0.03)


def test_independent_normal_matches_diagonal_mvn():
    D = ember.distributions
    loc = ember.tensor([[0.0, 1.0], [2.0, -1.0]], dtype=ember.float64)
    scale = ember.tensor([[1.0, 0.5], [2.0, 1.5]], dtype=ember.float64)
    ind = D.Independent(D.Normal(loc, scale), 1)
    mvn = D.MultivariateNormal(loc, scale_tril=ember.diag_embed(scale))
    x = ember.tensor([[0.5, 0.5], [1.0, 1.0]], dtype=ember.float64)
    np.testing.assert_allclose(ind.log_prob(x).numpy(), mvn.log_prob(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ind.entropy().numpy(), mvn.entropy().numpy(), rtol=1e-12)
    np.testing.assert_allclose(D.kl_divergence(ind, ind).numpy(), 0.0, atol=1e-12)
