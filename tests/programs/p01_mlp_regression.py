"""MLP regression: custom Dataset, DataLoader with workers, ReduceLROnPlateau,
early stopping and checkpoint save/load."""
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Regression(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        x = rng.uniform(-2, 2, size=(n, 3)).astype(np.float32)
        y = np.sin(x[:, :1]) + 0.5 * x[:, 1:2] ** 2 - x[:, 2:3] + 0.05 * rng.standard_normal((n, 1))
        self.x = torch.from_numpy(x)
        self.y = torch.from_numpy(y.astype(np.float32))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class MLP(nn.Module):
    def __init__(self, d_in=3, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            fan_in = p.shape[1] if p.dim() > 1 else p.shape[0]
            w = rng.uniform(-1, 1, size=tuple(p.shape)) / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(w.astype(np.float32)))


def evaluate(model, loader):
    model.eval()
    device = next(model.parameters()).device
    total, n = 0.0, 0
    with torch.no_grad():
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            total += F.mse_loss(model(xb), yb, reduction="sum").item()
            n += xb.shape[0]
    model.train()
    return total / n


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train = DataLoader(Regression(512, 0), batch_size=64, shuffle=False, num_workers=2,
                       persistent_workers=True)
    val = DataLoader(Regression(128, 1), batch_size=128)
    model = MLP()
    numpy_init(model, 0)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
    ckpt = os.path.join(tempfile.mkdtemp(), "best.pt")

    first = evaluate(model, val)
    best, bad, patience = float("inf"), 0, 4
    epochs = 0
    for epoch in range(40):
        for xb, yb in train:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
        v = evaluate(model, val)
        sched.step(v)
        epochs += 1
        if v < best - 1e-4:
            best, bad = v, 0
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optim": opt.state_dict(), "val": v}, ckpt)
        else:
            bad += 1
            if bad >= patience:
                break
    print(f"= val_first {first:.5f}")
    print(f"= val_best {best:.5f}")
    print(f"= epochs {epochs}")
    print(f"= final_lr {opt.param_groups[0]['lr']:.6f}")
    print(f"ok improved {best < first / 4}")

    state = torch.load(ckpt, map_location=device)
    fresh = MLP()
    fresh.load_state_dict(state["model"])
    opt2 = torch.optim.Adam(fresh.parameters(), lr=3e-2)
    opt2.load_state_dict(state["optim"])
    print(f"ok reloaded_matches {abs(evaluate(fresh, val) - state['val']) < 1e-6}")
    print(f"ok optim_state_steps {int(opt2.state_dict()['state'][0]['step']) > 0}")
    print(f"= saved_epoch {state['epoch']}")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
