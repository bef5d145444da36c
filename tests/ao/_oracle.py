"""Helpers: the same float module in ember and in torch (the test-only oracle), and torch's
quantization calls with its deprecation warnings silenced (pytest turns warnings into
errors)."""
import warnings

import numpy as np
import torch

import ember


def to_torch(t):
    return torch.from_numpy(np.array(t.detach().numpy()))


def to_ember(t):
    return ember.tensor(t.detach().numpy().copy())


def copy_params(ember_module, torch_module):
    """Give ``torch_module`` the parameters of ``ember_module`` (same names and shapes)."""
    theirs = dict(torch_module.named_parameters())
    with torch.no_grad():
        for name, p in ember_module.named_parameters():
            theirs[name].copy_(to_torch(p))


def torch_quantize_dynamic(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, *args, **kwargs)


def torch_call(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def torch_repr(obj):
    """torch's repr with its names spelled the ember way."""
    return repr(obj).replace("torch.", "ember.")
