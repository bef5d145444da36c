"""``out=`` of the ops whose out must already have the result's dtype (torch's structured
kernels): torch's RuntimeError for another dtype, the result written for the right one."""
import numpy as np
import pytest
import torch

import ember


def _x(lib):
    return lib.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])


CASES = {
    "matmul": lambda l, o: l.matmul(_x(l), _x(l).T, out=o[0]),
    "mm": lambda l, o: l.mm(_x(l), _x(l).T, out=o[0]),
    "bmm": lambda l, o: l.bmm(_x(l)[None], _x(l).T[None], out=o[0]),
    "mv": lambda l, o: l.mv(_x(l), _x(l)[0], out=o[0]),
    "dot": lambda l, o: l.dot(_x(l)[0], _x(l)[1], out=o[0]),
    "vdot": lambda l, o: l.vdot(_x(l)[0], _x(l)[1], out=o[0]),
    "addmm": lambda l, o: l.addmm(_x(l)[:, :2], _x(l), _x(l).T[:, :2], out=o[0]),
    "addmv": lambda l, o: l.addmv(_x(l)[:, 0], _x(l), _x(l)[0], out=o[0]),
    "baddbmm": lambda l, o: l.baddbmm(_x(l)[None, :, :2], _x(l)[None], _x(l).T[None, :, :2],
                                      out=o[0]),
    "argmax": lambda l, o: l.argmax(_x(l), 1, out=o[1]),
    "argmin": lambda l, o: l.argmin(_x(l), 1, out=o[1]),
    "max_dim": lambda l, o: l.max(_x(l), 1, out=o),
    "min_dim": lambda l, o: l.min(_x(l), 1, out=o),
    "sort": lambda l, o: l.sort(_x(l), 1, out=o),
    "topk": lambda l, o: l.topk(_x(l), 2, out=o),
    "aminmax": lambda l, o: l.aminmax(_x(l), dim=1, out=(o[0], o[0].clone())),
}
OUTS = {
    "right": ("float32", "int64"),
    "values_double": ("float64", "int64"),
    "values_half": ("float16", "int64"),
    "indices_int": ("float32", "int32"),
    "values_complex": ("complex64", "int64"),
}


def _outcome(lib, name, dts):
    o = tuple(lib.empty(0, dtype=getattr(lib, d)) for d in dts)
    try:
        r = CASES[name](lib, o)
    except RuntimeError as e:
        return str(e)
    rs = r if isinstance(r, tuple) else (r,)
    return [(str(t.dtype).split(".")[1], np.asarray(t.tolist()).tolist()) for t in rs]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("outs", sorted(OUTS))
def test_out_dtype_like_torch(name, outs):
    assert _outcome(ember, name, OUTS[outs]) == _outcome(torch, name, OUTS[outs])


@pytest.mark.parametrize("args", ("scalar_input", "scalar_other", "tensors", "double_other",
                                  "double_out"))
def test_where_out_like_torch(args):
    res = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, -2.0, 3.0])
        cond, out = x > 0, lib.empty(0, dtype=lib.float64 if args == "double_out" else
                                     lib.float32)
        a, b = {"scalar_input": (1.0, x), "scalar_other": (x, 2), "tensors": (x, -x),
                "double_other": (x, x.double()), "double_out": (x, -x)}[args]
        try:
            r = lib.where(cond, a, b, out=out)
            res.append((r is out, r.tolist()))
        except (TypeError, RuntimeError) as e:
            res.append((type(e).__name__, str(e)))
    assert res[0] == res[1]
