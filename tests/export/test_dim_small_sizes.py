"""Named Dims whose range reaches 0 or 1 (``Dim("n")``, ``Dim("n", min=0)``): as torch 2.13,
the exported range keeps the declared minimum and the exported module accepts those sizes,
while guards are checked size-obliviously (from 2: x * 2 has no ``n != 1`` to violate);
Dim.AUTO/DYNAMIC ranges start at 2; an example input of size 0 or 1 is refused."""
import warnings

import pytest
import torch

import ember


class _Double:
    def forward(self, x):
        return x * 2


class _Pair:
    def forward(self, x, y):
        return x.sum() + y.sum()


def _module(lib, cls):
    return type(cls.__name__, (lib.nn.Module,), {"forward": cls.forward})()


def _ranges(ep):
    # symbol names differ (s77 / s0): compare the ranges in order
    return [str(v) for v in ep.range_constraints.values()]


@pytest.mark.parametrize("spec", ["default", "min0", "min1", "min0max10", "min2max5", "auto",
                                  "dynamic"])
def test_ranges_as_torch(spec):
    def run(lib):
        D = lib.export.Dim
        d = {"default": lambda: D("n"), "min0": lambda: D("n", min=0),
             "min1": lambda: D("n", min=1), "min0max10": lambda: D("n", min=0, max=10),
             "min2max5": lambda: D("n", min=2, max=5), "auto": lambda: D.AUTO,
             "dynamic": lambda: D.DYNAMIC}[spec]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _ranges(lib.export.export(_module(lib, _Double), (lib.ones(3, 2),),
                                             dynamic_shapes={"x": {0: d}}))
    assert run(ember) == run(torch)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_named_dim_module_runs_at_small_sizes(n):
    outs = []
    for lib in (torch, ember):
        nd = lib.export.Dim("n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = lib.export.export(_module(lib, _Double), (lib.ones(3, 2),),
                                   dynamic_shapes={"x": {0: nd}})
            outs.append(ep.module()(lib.arange(2.0 * n).reshape(n, 2)).tolist())
            m = lib.export.Dim("m")
            ep2 = lib.export.export(_module(lib, _Pair), (lib.ones(3), lib.ones(6)),
                                    dynamic_shapes={"x": {0: m}, "y": {0: 2 * m}})
            outs.append(ep2.module()(lib.ones(n), lib.ones(2 * n)).item())
            outs.append(_ranges(ep2)[:1])  # the root's (torch also lists 2*m's)
    assert outs[:3] == outs[3:]


@pytest.mark.parametrize("kind", ["AUTO", "DYNAMIC", "min1", "min3"])
def test_runtime_lower_bound_as_torch(kind):
    # torch's module checks a lower bound only above 2: AUTO/DYNAMIC (range [2, ...]) and
    # Dim("n", min=1) run at sizes 0 and 1; Dim("n", min=3) refuses 2
    outs = []
    for lib in (torch, ember):
        D = lib.export.Dim
        d = {"AUTO": D.AUTO, "DYNAMIC": D.DYNAMIC, "min1": D("n", min=1),
             "min3": D("n", min=3)}[kind]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = lib.export.export(_module(lib, _Double), (lib.ones(4, 2),),
                                   dynamic_shapes={"x": {0: d}})
        for n in (0, 1, 2, 5):
            try:
                outs.append(ep.module()(lib.ones(n, 2)).tolist())
            except (RuntimeError, AssertionError):  # torch's module guard: AssertionError
                outs.append("refused")
    assert outs[:4] == outs[4:]


def test_small_example_inputs_are_refused():
    for n in (0, 1):
        with pytest.raises(ember.export.UserError if hasattr(ember.export, "UserError")
                           else Exception, match="size"):
            ember.export.export(_module(ember, _Double), (ember.ones(n, 2),),
                                dynamic_shapes={"x": {0: ember.export.Dim("n", min=0)}})
