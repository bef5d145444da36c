"""Transfer learning bookkeeping: pretrain a backbone, save it, load partial
weights into a new model with strict=False (renamed and reshaped keys),
freeze layers with requires_grad_, optimizer over trainable params only,
optimizer/scheduler state round trip through torch.save/torch.load, and
resuming training bit-exactly."""
import io
import os
import tempfile
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(8, 16)
        self.bn = nn.BatchNorm1d(16)
        self.layer2 = nn.Linear(16, 16)

    def forward(self, x):
        return F.relu(self.layer2(F.relu(self.bn(self.layer1(x)))))


class Pretrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.backbone(x))


class Finetune(nn.Module):
    def __init__(self, n_classes=2):
        super().__init__()
        self.backbone = Backbone()
        self.classifier = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, n_classes))

    def forward(self, x):
        return self.classifier(self.backbone(x))


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))


def data(seed, n, classes):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = (x[:, :classes].argmax(1)).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def train(model, opt, x, y, steps, sched=None):
    model.train()
    for i in range(steps):
        xb, yb = x[(i * 32) % len(x):][:32], y[(i * 32) % len(x):][:32]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
    return loss.item()


def main():
    tmp = tempfile.mkdtemp()
    pre = Pretrain()
    numpy_init(pre, 0)
    x4, y4 = data(0, 256, 4)
    opt = torch.optim.SGD(pre.parameters(), lr=0.1, momentum=0.9)
    print(f"= pretrain_loss {train(pre, opt, x4, y4, 40):.5f}")
    torch.save(pre.state_dict(), os.path.join(tmp, "pre.pt"))
    print(f"= pre_keys {list(pre.state_dict().keys())[:5]}")

    # load the backbone into a model with a different head; the head keys must not match
    ft = Finetune()
    numpy_init(ft, 1)
    state = torch.load(os.path.join(tmp, "pre.pt"), map_location="cpu", weights_only=True)
    result = ft.load_state_dict(state, strict=False)
    print(f"= missing {sorted(result.missing_keys)}")
    print(f"= unexpected {sorted(result.unexpected_keys)}")
    print(f"ok backbone_copied {torch.equal(ft.backbone.layer2.weight, pre.backbone.layer2.weight)}")
    try:
        ft.load_state_dict(state)
    except RuntimeError as e:
        print(f"= strict_error {'Missing key(s)' in str(e) and 'Unexpected key(s)' in str(e)}")
    bad = OrderedDict(state)
    bad["backbone.layer1.weight"] = torch.zeros(3, 3)
    try:
        ft.load_state_dict(bad, strict=False)
    except RuntimeError as e:
        print(f"= size_mismatch_error {'size mismatch' in str(e)}")

    # rename keys (prefix surgery) and load only the backbone submodule
    sub = {k.removeprefix("backbone."): v for k, v in state.items() if k.startswith("backbone.")}
    ft.backbone.load_state_dict(sub)

    # freeze the first layer and the BatchNorm affine parameters (running stats still update)
    for p in ft.backbone.layer1.parameters():
        p.requires_grad_(False)
    ft.backbone.bn.requires_grad_(False)
    trainable = [p for p in ft.parameters() if p.requires_grad]
    print(f"= trainable {sum(p.numel() for p in trainable)} of {sum(p.numel() for p in ft.parameters())}")
    frozen_before = ft.backbone.layer1.weight.clone()

    x2, y2 = data(1, 256, 2)
    opt = torch.optim.Adam([
        {"params": ft.backbone.layer2.parameters(), "lr": 1e-3},
        {"params": ft.classifier.parameters(), "lr": 1e-2},
    ])
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.99)
    loss_a = train(ft, opt, x2, y2, 20, sched)
    print(f"= ft_loss {loss_a:.5f}")
    print(f"ok frozen_unchanged {torch.equal(frozen_before, ft.backbone.layer1.weight)}")
    print(f"ok frozen_no_grad {ft.backbone.layer1.weight.grad is None}")

    # checkpoint everything, continue training; then resume from the checkpoint and compare
    buf = io.BytesIO()
    torch.save({"model": ft.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                "rng": np.random.default_rng(5).integers(0, 100, 3).tolist()}, buf)
    loss_b = train(ft, opt, x2, y2, 10, sched)
    final_w = ft.classifier[2].weight.detach().clone()

    buf.seek(0)
    ck = torch.load(buf, weights_only=True)
    ft2 = Finetune()
    ft2.load_state_dict(ck["model"])
    for p in ft2.backbone.layer1.parameters():
        p.requires_grad_(False)
    ft2.backbone.bn.requires_grad_(False)
    opt2 = torch.optim.Adam([
        {"params": ft2.backbone.layer2.parameters(), "lr": 1e-3},
        {"params": ft2.classifier.parameters(), "lr": 1e-2},
    ])
    opt2.load_state_dict(ck["opt"])
    sched2 = torch.optim.lr_scheduler.ExponentialLR(opt2, gamma=0.99)
    sched2.load_state_dict(ck["sched"])
    loss_c = train(ft2, opt2, x2, y2, 10, sched2)
    print(f"= opt_state_keys {sorted(ck['opt']['state'][0].keys())} groups {len(ck['opt']['param_groups'])}")
    print(f"= resumed_lr {opt2.param_groups[1]['lr']:.6f}")
    print(f"ok resume_exact {loss_b == loss_c and torch.equal(final_w, ft2.classifier[2].weight)}")
    print(f"= loss_b {loss_b:.5f}")
    print(f"= num_batches_tracked {int(ft2.backbone.bn.num_batches_tracked)}")

    # dtype conversion of a state dict and loading with assign
    half = {k: v.half() if v.is_floating_point() else v for k, v in ft2.state_dict().items()}
    ft3 = Finetune().half()
    ft3.load_state_dict(half, assign=True)
    print(f"= half_dtype {str(ft3.classifier[0].weight.dtype).split('.')[-1]} {ft3.classifier[0].weight.is_leaf}")


if __name__ == "__main__":
    main()
