"""Autograd beyond backward(): a custom autograd.Function (with
save_for_backward, needs_input_grad, mark_non_differentiable, once_differentiable-
free double backward), gradcheck/gradgradcheck, tensor and module hooks,
retain_grad, and a WGAN-GP style gradient penalty with create_graph=True."""
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Function, gradcheck, gradgradcheck


class SoftClamp(Function):
    """y = limit * tanh(x / limit); also returns a non-differentiable saturation mask."""

    @staticmethod
    def forward(ctx, x, limit):
        y = limit * torch.tanh(x / limit)
        ctx.save_for_backward(x, y)
        ctx.limit = limit
        mask = y.abs() > 0.9 * limit
        ctx.mark_non_differentiable(mask)
        return y, mask

    @staticmethod
    def backward(ctx, grad_y, grad_mask):
        x, y = ctx.saved_tensors
        grad_x = None
        if ctx.needs_input_grad[0]:
            # written with differentiable ops so double backward works
            grad_x = grad_y * (1 - (y / ctx.limit) ** 2)
        return grad_x, None


class ScaledMatmul(Function):
    @staticmethod
    def forward(ctx, a, b, scale=1.0):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return a @ b * scale

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g @ b.transpose(-1, -2) * ctx.scale if ctx.needs_input_grad[0] else None
        gb = a.transpose(-1, -2) @ g * ctx.scale if ctx.needs_input_grad[1] else None
        return ga, gb, None


def main():
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((4, 5)) * 2).requires_grad_()
    a = torch.from_numpy(rng.standard_normal((3, 4))).requires_grad_()
    print(f"= gradcheck_softclamp {gradcheck(lambda t: SoftClamp.apply(t, 1.5)[0], (x,))}")
    print(f"= gradgradcheck_softclamp {gradgradcheck(lambda t: SoftClamp.apply(t, 1.5)[0], (x,))}")
    print(f"= gradcheck_matmul {gradcheck(lambda p, q: ScaledMatmul.apply(p, q, 0.5), (a, x))}")

    y, mask = SoftClamp.apply(x, 1.5)
    print(f"= mask {mask.sum().item()} {mask.requires_grad} {mask.dtype}")
    y.sum().backward()
    print(f"= softclamp_grad_sum {x.grad.sum().item():.6f}")

    # tensor hooks, retain_grad and module hooks on a small critic
    critic = nn.Sequential(nn.Linear(5, 16), nn.Softplus(), nn.Linear(16, 1))
    with torch.no_grad():
        for p in critic.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    seen = {}
    h1 = critic[0].register_forward_hook(lambda m, inp, out: seen.__setitem__("fwd", tuple(out.shape)))
    h2 = critic[2].register_full_backward_hook(
        lambda m, gin, gout: seen.__setitem__("bwd", round(gout[0].abs().sum().item(), 5)))
    h3 = critic[0].weight.register_hook(lambda g: g * 0.5)   # halves the first layer's gradient

    real = torch.from_numpy(rng.standard_normal((8, 5)).astype(np.float32))
    fake = torch.from_numpy(rng.standard_normal((8, 5)).astype(np.float32) + 1.0)
    eps = torch.from_numpy(rng.uniform(size=(8, 1)).astype(np.float32))
    interp = (eps * real + (1 - eps) * fake).requires_grad_(True)
    score = critic(interp)
    hidden = critic[1](critic[0](interp))
    hidden.retain_grad()
    grads, = torch.autograd.grad(score.sum(), interp, create_graph=True)
    penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    w_loss = critic(fake).mean() - critic(real).mean()
    loss = w_loss + 10 * penalty
    loss.backward(retain_graph=True)
    print(f"= penalty {penalty.item():.6f}")
    print(f"= w_loss {w_loss.item():.6f}")
    print(f"= w0_grad {critic[0].weight.grad.sum().item():.6f} {critic[0].weight.grad.abs().sum().item():.6f}")
    print(f"= b2_grad {critic[2].bias.grad.item():.6f}")
    print(f"= hooks {seen['fwd']} {seen['bwd']}")
    print(f"= hidden_grad_is_none {hidden.grad is None}")
    hidden.sum().backward()
    print(f"= hidden_grad {hidden.grad.sum().item():.1f}")
    for h in (h1, h2, h3):
        h.remove()

    # higher-order derivatives of a scalar function
    t = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    f = (torch.sin(t) * t ** 3).sum()
    g1, = torch.autograd.grad(f, t, create_graph=True)
    g2, = torch.autograd.grad(g1.sum(), t, create_graph=True)
    g3, = torch.autograd.grad(g2.sum(), t)
    print(f"= derivs {g1.tolist()[0]:.6f} {g2.tolist()[1]:.6f} {g3.tolist()[2]:.6f}")

    # anomaly detection names the failing backward
    with torch.autograd.detect_anomaly(check_nan=True):
        z = torch.tensor([-1.0, 4.0], requires_grad=True)
        try:
            torch.sqrt(z).sum().backward()
            print("= anomaly none")
        except RuntimeError as e:
            print(f"= anomaly {'SqrtBackward0' in str(e)}")


if __name__ == "__main__":
    main()
