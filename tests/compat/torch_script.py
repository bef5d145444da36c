"""An ordinary PyTorch training script (unmodified): run by test_compat through ember.compat."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
n = 256
x = torch.randn(n, 4)
w_true = torch.tensor([[1.5], [-2.0], [0.5], [3.0]])
y = (x @ w_true + 0.1 * torch.randn(n, 1) > 0).float().squeeze(1).long()

model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.05)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)

for epoch in range(10):
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
    sched.step()

with torch.no_grad():
    acc = (model(x).argmax(dim=1) == y).float().mean().item()
path = sys.argv[1]
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
state = torch.load(path)
model2 = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
model2.load_state_dict(state["model"])
print(f"torch module is {type(torch.ones(1)).__module__.split('.')[0]}; accuracy {acc:.3f}; "
      f"reloaded equal: {torch.equal(model2[0].weight, model[0].weight)}")
