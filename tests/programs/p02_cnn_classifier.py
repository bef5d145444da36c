"""CNN classifier: Conv2d/BatchNorm/Dropout/MaxPool, augmentation with tensor
ops, train/eval modes, torch.no_grad evaluation, accuracy via argmax/eq/sum."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_images(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=n)
    imgs = 0.3 * rng.standard_normal((n, 1, 12, 12)).astype(np.float32)
    for i, c in enumerate(labels):
        r = rng.integers(2, 10)
        if c == 0:
            imgs[i, 0, r, :] += 1.5
        elif c == 1:
            imgs[i, 0, :, r] += 1.5
        elif c == 2:
            imgs[i, 0, np.arange(12), np.arange(12)] += 1.5
        else:
            imgs[i, 0, 4:8, 4:8] += 1.0
    return torch.from_numpy(imgs), torch.from_numpy(labels)


class Net(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((3, 3)),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(16 * 9, n_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() > 1:
                fan_in = p[0].numel()
                p.copy_(torch.from_numpy((rng.standard_normal(p.shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)))
            elif name.endswith("bias"):
                p.zero_()


def augment(x, flips):
    # flip selected images left-right, add a one-pixel shift with zero padding
    x = torch.where(flips.view(-1, 1, 1, 1), x.flip(-1), x)
    x = F.pad(x, (1, 1, 1, 1))[:, :, 1:13, :12]
    return x


def evaluate(model, loader):
    model.eval()
    correct, total, loss = 0, 0, 0.0
    per_class = torch.zeros(4, dtype=torch.long)
    with torch.no_grad():
        for xb, yb in loader:
            logits = model(xb)
            loss += F.cross_entropy(logits, yb, reduction="sum").item()
            pred = logits.argmax(dim=1)
            hit = pred.eq(yb)
            correct += hit.sum().item()
            total += yb.numel()
            per_class += torch.bincount(yb[hit], minlength=4)
    return loss / total, correct / total, per_class


def main():
    torch.manual_seed(0)
    xtr, ytr = make_images(256, 0)
    xte, yte = make_images(128, 1)
    train = DataLoader(TensorDataset(xtr, ytr), batch_size=32, shuffle=True)
    test = DataLoader(TensorDataset(xte, yte), batch_size=64)
    model = Net()
    numpy_init(model, 0)
    print(f"= n_params {sum(p.numel() for p in model.parameters())}")
    print(f"= n_buffers {sum(b.numel() for b in model.buffers())}")
    loss0, acc0, _ = evaluate(model, test)
    print(f"= initial_loss {loss0:.5f}")
    print(f"= initial_acc {acc0:.4f}")

    # one deterministic train-mode forward updates the BatchNorm running stats
    model.train()
    with torch.no_grad():
        model.features(xtr[:64])
    bn = model.features[1]
    print(f"= bn_running_mean {bn.running_mean.sum().item():.5f}")
    print(f"= bn_running_var {bn.running_var.sum().item():.5f}")
    print(f"= bn_batches {int(bn.num_batches_tracked)}")

    rng = np.random.default_rng(3)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4, nesterov=True)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    for epoch in range(8):
        model.train()
        for xb, yb in train:
            flips = torch.from_numpy(rng.random(xb.shape[0]) < 0.5)
            logits = model(augment(xb, flips))
            loss = F.cross_entropy(logits, yb, label_smoothing=0.05)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sched.step()
    loss1, acc1, per_class = evaluate(model, test)
    print(f"ok loss_decreased {loss1 < loss0}")
    print(f"ok accuracy_high {acc1 > 0.85}")
    print(f"ok per_class_consistent {per_class.sum().item() == round(acc1 * 128)}")
    print(f"= final_lr {sched.get_last_lr()[0]:.5f}")
    print(f"~ final_acc {acc1:.4f}")


if __name__ == "__main__":
    main()
