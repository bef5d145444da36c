"""Shared models and helpers of the fx tests."""
import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F


def rand(*shape, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def close(a, b, atol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=atol, rtol=1e-5)


class BasicBlock(nn.Module):
    """A ResNet basic block with a projection shortcut."""

    def __init__(self, cin=4, cout=8, stride=2):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                        nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.downsample(x))


class AddRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, y):
        a = F.relu(self.lin(x) + y)
        return F.relu(a + x) * 2
