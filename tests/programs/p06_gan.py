"""A GAN on 2-D data: generator and discriminator with separate optimizers,
detach() for the discriminator step, BCEWithLogitsLoss, requires_grad toggling
and an EMA copy of the generator."""
import copy

import numpy as np
import torch
import torch.nn as nn


def real_batch(rng, n):
    # a ring of 4 gaussians
    k = rng.integers(0, 4, size=n)
    centers = np.stack([np.cos(k * np.pi / 2), np.sin(k * np.pi / 2)], axis=1) * 2.0
    return torch.from_numpy((centers + 0.1 * rng.standard_normal((n, 2))).astype(np.float32))


def mlp(d_in, d_out, hidden=32):
    return nn.Sequential(nn.Linear(d_in, hidden), nn.LeakyReLU(0.2),
                         nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                         nn.Linear(hidden, d_out))


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan = p.shape[1] if p.dim() > 1 else p.shape[0]
            p.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32) / np.sqrt(fan)))


def main():
    G, D = mlp(4, 2), mlp(2, 1)
    numpy_init(G, 0)
    numpy_init(D, 1)
    G_ema = copy.deepcopy(G)
    for p in G_ema.parameters():
        p.requires_grad_(False)
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    rng = np.random.default_rng(0)
    d_losses, g_losses = [], []
    for step in range(150):
        real = real_batch(rng, 64)
        z = torch.from_numpy(rng.standard_normal((64, 4)).astype(np.float32))
        fake = G(z)

        # discriminator: real -> 1, fake -> 0; the generator gets no gradient here
        opt_d.zero_grad()
        opt_g.zero_grad()
        d_loss = bce(D(real), torch.ones(64, 1)) + bce(D(fake.detach()), torch.zeros(64, 1))
        d_loss.backward()
        opt_d.step()
        assert all(p.grad is None for p in G.parameters())

        # generator: fool D; D's parameters are frozen for this step
        for p in D.parameters():
            p.requires_grad_(False)
        g_loss = bce(D(fake), torch.ones(64, 1))
        g_loss.backward()
        opt_g.step()
        for p in D.parameters():
            p.requires_grad_(True)

        with torch.no_grad():
            for pe, p in zip(G_ema.parameters(), G.parameters()):
                pe.mul_(0.95).add_(p, alpha=0.05)
        d_losses.append(d_loss.item())
        g_losses.append(g_loss.item())

    with torch.no_grad():
        z = torch.from_numpy(np.random.default_rng(1).standard_normal((512, 4)).astype(np.float32))
        samples = G_ema(z)
        radius = samples.norm(dim=1)
        d_real = torch.sigmoid(D(real_batch(np.random.default_rng(2), 256))).mean()
    print(f"= d_loss {d_losses[0]:.5f} {d_losses[1]:.5f} {d_losses[10]:.5f}")
    print(f"= g_loss {g_losses[0]:.5f} {g_losses[1]:.5f} {g_losses[10]:.5f}")
    print(f"= d_grad_none_after_zero {all(p.grad is None for p in D.parameters()) is False}")
    print(f"= sample_shape {tuple(samples.shape)}")
    print(f"= d_real_prob {d_real.item():.4f}")
    print(f"= mean_radius {radius.mean().item():.4f}")
    print(f"ok radius_moved_toward_2 {abs(radius.mean().item() - 2.0) < 1.5}")


if __name__ == "__main__":
    main()
