"""Convolutional autoencoder: Conv2d/ConvTranspose2d, MSELoss, a custom module
with register_buffer (input normalisation), parameter groups with different
learning rates, CosineAnnealingLR, gradient accumulation."""
import numpy as np
import torch
import torch.nn as nn


class Normalize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.as_tensor(std).view(1, -1, 1, 1))

    def forward(self, x):
        return (x - self.mean) / self.std

    def inverse(self, x):
        return x * self.std + self.mean


class AutoEncoder(nn.Module):
    def __init__(self, mean, std, latent=8):
        super().__init__()
        self.norm = Normalize(mean, std)
        self.encoder = nn.Sequential(
            nn.Conv2d(2, 8, 3, stride=2, padding=1), nn.LeakyReLU(0.1),   # 16 -> 8
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1),  # 8 -> 4
            nn.Flatten(), nn.Linear(16 * 4 * 4, latent))
        self.decoder = nn.Sequential(
            nn.Linear(latent, 16 * 4 * 4), nn.Unflatten(1, (16, 4, 4)), nn.ELU(),
            nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1), nn.ELU(),
            nn.ConvTranspose2d(8, 2, 4, stride=2, padding=1))

    def forward(self, x):
        z = self.encoder(self.norm(x))
        return self.norm.inverse(self.decoder(z)), z


def make_images(n, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.linspace(-1, 1, 16), np.linspace(-1, 1, 16), indexing="ij")
    cx, cy = rng.uniform(-0.5, 0.5, (2, n, 1, 1))
    r = rng.uniform(0.2, 0.5, (n, 1, 1))
    blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / r ** 2)
    ring = np.cos(6 * np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2))
    img = np.stack([2.0 + blob, -1.0 + 0.5 * ring], axis=1)
    return torch.from_numpy(img.astype(np.float32))


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            fan = p[0].numel() if p.dim() > 1 else p.numel()
            p.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32) / np.sqrt(fan)))


def main():
    data = make_images(96, 0)
    mean = data.mean(dim=(0, 2, 3))
    std = data.std(dim=(0, 2, 3))
    model = AutoEncoder(mean, std)
    numpy_init(model, 0)
    print(f"= buffers {sorted(n for n, _ in model.named_buffers())}")
    print(f"= state_keys {len(model.state_dict())}")
    print(f"= mean {mean.tolist()[0]:.5f} {mean.tolist()[1]:.5f}")

    opt = torch.optim.Adam([
        {"params": model.encoder.parameters(), "lr": 1e-2},
        {"params": model.decoder.parameters()},
    ], lr=5e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=30, eta_min=1e-4)
    crit = nn.MSELoss()
    with torch.no_grad():
        recon, z = model(data)
        loss0 = crit(recon, data).item()
    print(f"= recon_shape {tuple(recon.shape)} latent {tuple(z.shape)}")
    print(f"= loss0 {loss0:.5f}")

    accum = 2
    history = []
    for epoch in range(30):
        opt.zero_grad()
        for i, xb in enumerate(data.split(24)):
            recon, _ = model(xb)
            loss = crit(recon, xb) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
        sched.step()
        history.append(loss.item() * accum)
    lrs = [g["lr"] for g in opt.param_groups]
    print(f"= lrs {lrs[0]:.6f} {lrs[1]:.6f}")
    print(f"= history {history[0]:.5f} {history[4]:.5f} {history[9]:.5f}")
    with torch.no_grad():
        recon, _ = model(data)
        loss1 = crit(recon, data).item()
    print(f"= loss1 {loss1:.5f}")
    print(f"ok improved {loss1 < 0.5 * loss0}")
    print(f"ok buffers_not_params {all(b.requires_grad is False for b in model.buffers())}")


if __name__ == "__main__":
    main()
