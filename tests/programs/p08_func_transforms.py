"""torch.func: per-sample gradients with vmap(grad(...)) over functional_call,
jacrev/jacfwd/hessian, vmap with in_dims/out_dims, a Newton step built from the
Hessian, and a model ensemble with stack_module_state."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, hessian, jacfwd, jacrev, stack_module_state, vmap


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan = p.shape[1] if p.dim() > 1 else p.shape[0]
            p.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32) / np.sqrt(fan)))


def main():
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 3))
    numpy_init(model, 0)
    x = torch.from_numpy(rng.standard_normal((10, 6)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, size=10))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_fn(p, xi, yi):
        logits = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(logits, yi.unsqueeze(0))

    per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
    print(f"= per_sample_shapes {[tuple(v.shape) for v in per_sample.values()]}")
    # the mean of per-sample gradients equals the batch gradient
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    batch_grad = model[0].weight.grad
    print(f"ok mean_matches_batch {torch.allclose(per_sample['0.weight'].mean(0), batch_grad, atol=1e-6)}")
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_sample.values()]).norm(dim=0)
    print(f"= per_sample_norms {' '.join(f'{v:.5f}' for v in norms[:4].tolist())}")

    # DP-SGD style clipping of per-sample gradients
    factor = (1.0 / (norms + 1e-6)).clamp(max=1.0)
    clipped = {k: (g * factor.view(-1, *[1] * (g.dim() - 1))).sum(0) for k, g in per_sample.items()}
    print(f"= clipped_sum {clipped['2.bias'].sum().item():.5f} {clipped['0.weight'].abs().sum().item():.5f}")

    # Jacobians and Hessians of a scalar field, checked against each other
    def f(v):
        return (torch.sin(v) * v.roll(1)).sum() + (v ** 2).prod()

    v = torch.from_numpy(rng.standard_normal(5))
    j1 = jacrev(f)(v)
    j2 = jacfwd(f)(v)
    h = hessian(f)(v)
    print(f"ok jac_rev_fwd_agree {torch.allclose(j1, j2)}")
    print(f"= jac {' '.join(f'{t:.6f}' for t in j1.tolist())}")
    print(f"= hess_diag {' '.join(f'{t:.6f}' for t in h.diagonal().tolist())}")
    print(f"ok hess_symmetric {torch.allclose(h, h.T)}")

    # vector-valued Jacobian of the model output w.r.t. its input, per example
    jac_x = vmap(jacrev(lambda xi: model(xi)))(x)
    print(f"= jac_x_shape {tuple(jac_x.shape)} {jac_x[0, 1, 2].item():.6f}")

    # Newton's method on a convex quadratic + quartic
    A = torch.tensor([[3.0, 0.5], [0.5, 1.0]], dtype=torch.float64)

    def energy(w):
        return 0.5 * w @ A @ w + 0.1 * (w ** 4).sum() - w.sum()

    w = torch.zeros(2, dtype=torch.float64)
    for _ in range(6):
        w = w - torch.linalg.solve(hessian(energy)(w), grad(energy)(w))
    print(f"= newton_w {w[0].item():.8f} {w[1].item():.8f}")
    print(f"= newton_grad_norm_small {grad(energy)(w).norm().item() < 1e-10}")

    # vmap with out_dims and a batched matrix-vector product
    mats = torch.from_numpy(rng.standard_normal((4, 3, 3)).astype(np.float32))
    vecs = torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32))
    out = vmap(torch.mv, in_dims=(0, 1), out_dims=1)(mats, vecs)
    print(f"= vmap_mv {tuple(out.shape)} {out.sum().item():.5f}")

    # an ensemble of 3 models evaluated with one vmap call
    models = [nn.Linear(6, 2) for _ in range(3)]
    for i, m in enumerate(models):
        numpy_init(m, 10 + i)
    stacked_params, stacked_buffers = stack_module_state(models)
    base = models[0]

    def run(p, b, xb):
        return functional_call(base, (p, b), (xb,))

    ens = vmap(run, in_dims=(0, 0, None))(stacked_params, stacked_buffers, x)
    ref = torch.stack([m(x) for m in models])
    print(f"= ensemble {tuple(ens.shape)} {ens.sum().item():.5f}")
    print(f"ok ensemble_matches {torch.allclose(ens, ref, atol=1e-6)}")


if __name__ == "__main__":
    main()
