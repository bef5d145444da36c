"""Modules and functions the jit tests script and trace (written out in a file: jit.script
reads source code).  The fresh-process tests never import this file."""
from typing import Dict, List, Optional, Tuple

import ember
import ember.nn as nn
from ember import jit


def branchy(x, y):
    if x.sum() < 0:
        return -y
    return y


def assign_in_branches(x, y):
    z = x * 2
    if x.mean() > 0:
        z = z + y
        w = y * 3
    else:
        w = y - 1
    return z * w


def double_until(x, limit: float):
    while x.abs().sum() < limit:
        x = x * 2.0 + 0.5
    return x


def python_control(x, n: int, flags: List[bool], opt: Optional[ember.Tensor] = None):
    out = x
    for i in range(n):
        if flags[i]:
            out = out + i
    if opt is not None:
        out = out * opt
    return out


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            y = self.lin(x)
        else:
            y = -x
        return y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.bn = nn.BatchNorm1d(4)
        self.scale = 2.0
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU()])

    def forward(self, x, shift: int = 1):
        h = self.helper(self.gate(x)) + shift
        while h.abs().sum() < 100.0:
            h = h * self.scale + 1.0
        for layer in self.layers:
            h = layer(h)
        return self.bn(h)

    def helper(self, x):
        return x + 1

    @jit.export
    def encode(self, x):
        return self.gate.lin(x).relu()

    @jit.ignore
    def debug(self, x):
        return x.tolist()

    @jit.unused
    def training_only(self, x):
        try:
            return x
        except Exception:
            return x


class Pair(nn.Module):
    def forward(self, x, d: Dict[str, ember.Tensor]) -> Tuple[ember.Tensor, ember.Tensor]:
        return x + d["a"], x * d["b"]


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.l2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(self.bn(self.l1(x)).relu())


# outside the TorchScript subset (each used by one test of the error messages)
def uses_try(x):
    try:
        return x + 1
    except RuntimeError:
        return x


def uses_yield(x):
    yield x


def uses_lambda(x):
    f = lambda t: t + 1  # noqa: E731
    return f(x)


def uses_kwargs(x, **kwargs):
    return x


def uses_varargs(x, *rest):
    return x


def uses_global(x):
    global _G
    _G = x
    return x


def uses_star_call(x, shape: List[int]):
    return x.reshape(*shape)


def uses_set(x):
    s = {1, 2}
    return x


class BadMethod(nn.Module):
    def forward(self, x):
        try:
            return x
        finally:
            pass


class ModeDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        if self.training:
            return self.bn(self.lin(x)) * 2
        return self.bn(self.lin(x))


class ReluLinear(nn.Linear):
    """A subclass of one of ember's modules, calling its forward through super()."""

    def forward(self, x):
        y = super().forward(x)
        if y.sum() > 0:
            return y.relu()
        return y


def returns_set(x) -> set:
    return set()


def _signed(x, y):
    if x.sum() < 0:
        return -y
    return y


def calls_a_helper(x, y):
    return _signed(x, y) * 2


def _bad_helper(x):
    try:
        return x
    except Exception:
        return x


def calls_a_bad_helper(x):
    return _bad_helper(x)


def three_way(x):
    if x.mean() > 1:
        return x * 3
    elif x.mean() > 0:
        y = x + 1
        return y * 2
    z = x - 1
    if z.sum() < -10:
        z = z * 0
    return z


def uses_nested_def(x):
    def inner(y):
        return y + 1
    return inner(x)


def uses_match(x, n: int):
    match n:
        case 1:
            return x
    return x


def uses_dict_expansion(x, d: Dict[str, int]):
    e = {**d}
    return x


def uses_star_list(x, xs: List[int]):
    ys = [*xs]
    return x


def wrong_return(x) -> int:
    return x * 2
