"""ember.fx workloads (issue 6): a Conv2d+BatchNorm2d eval model before and after
``fx.experimental.optimization.fuse`` (each library uses its own fuse, so the
ratio compares like with like), and the cost of tracing itself."""
import importlib

import numpy as np

from .workloads import workload


def _model(lib):
    nn = lib.nn
    lib.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                      nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
    return m.eval()


def _input(lib):
    a = np.random.default_rng(0).standard_normal((8, 3, 32, 32)).astype(np.float32)
    return lib.from_numpy(a)


@workload("conv_bn_eval", "fx")
def conv_bn_eval(lib):
    m, x = _model(lib), _input(lib)

    def step():
        with lib.no_grad():
            return m(x)
    return step


@workload("conv_bn_eval_fused", "fx")
def conv_bn_eval_fused(lib):
    opt = importlib.import_module(f"{lib.__name__}.fx.experimental.optimization")
    m, x = opt.fuse(_model(lib)), _input(lib)

    def step():
        with lib.no_grad():
            return m(x)
    return step


@workload("fx_symbolic_trace_block", "fx")
def fx_symbolic_trace_block(lib):
    importlib.import_module(f"{lib.__name__}.fx")
    m = _model(lib)
    return lambda: lib.fx.symbolic_trace(m)
