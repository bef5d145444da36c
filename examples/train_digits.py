"""ember's main demo: train a small CNN on the 8x8 handwritten digits, PyTorch style.

Everything below is ordinary PyTorch code with ``import ember as torch``: a Dataset
and DataLoader, a CNN, AdamW with a OneCycle schedule, a tqdm progress bar with
loss and throughput, evaluation, and a checkpoint that is saved, reloaded into a
fresh model and optimizer, and trained further.  Runs offline in well under a
minute on 2 cores.
"""
import os
import tempfile
import time

import numpy as np
from tqdm import tqdm

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset

HERE = os.path.dirname(os.path.abspath(__file__))


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn = nn.BatchNorm2d(32)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        x = self.drop(F.relu(self.fc1(x.flatten(1))))
        return self.fc2(x)


def load_digits():
    d = np.load(os.path.join(HERE, "data", "digits.npz"))
    x = torch.tensor(d["images"], dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(d["labels"].astype(np.int64))
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    x, y = x[perm], y[perm]
    n_test = 360
    return TensorDataset(x[n_test:], y[n_test:]), TensorDataset(x[:n_test], y[:n_test])


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for xb, yb in loader:
            correct += (model(xb).argmax(1) == yb).sum().item()
            total += len(yb)
    model.train()
    return correct / total


def train(model, opt, sched, loader, epochs, first_epoch=0):
    for epoch in range(first_epoch, first_epoch + epochs):
        bar = tqdm(loader, desc=f"epoch {epoch + 1:2d}", mininterval=0.5)
        seen, t0 = 0, time.perf_counter()
        for xb, yb in bar:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            sched.step()
            seen += len(yb)
            bar.set_postfix(refresh=False, loss=f"{loss.item():.3f}",
                            samples_per_s=f"{seen / (time.perf_counter() - t0):.0f}")
        bar.close()


def main(epochs=12, resume_at=6):
    torch.manual_seed(0)
    start = time.perf_counter()
    train_set, test_set = load_digits()
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)

    model = DigitsCNN()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, epochs=epochs,
                                                steps_per_epoch=len(train_loader))
    print(model)
    train(model, opt, sched, train_loader, resume_at)
    print(f"after {resume_at} epochs: test accuracy {evaluate(model, test_loader):.4f}")

    # checkpoint, then resume into fresh objects as a restarted job would
    path = os.path.join(tempfile.mkdtemp(), "digits.pt")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                "sched": sched.state_dict(), "epoch": resume_at}, path)
    state = torch.load(path)
    model = DigitsCNN()
    model.load_state_dict(state["model"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    opt.load_state_dict(state["opt"])
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, epochs=epochs,
                                                steps_per_epoch=len(train_loader))
    sched.load_state_dict(state["sched"])
    print(f"checkpoint saved to {path} and resumed at epoch {state['epoch']}")
    train(model, opt, sched, train_loader, epochs - resume_at, first_epoch=resume_at)

    acc = evaluate(model, test_loader)
    print(f"final test accuracy {acc:.4f} ({len(test_set)} held-out digits) in "
          f"{time.perf_counter() - start:.1f} s")
    return acc


if __name__ == "__main__":
    main()
