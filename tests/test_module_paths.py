"""Modules real programs import by torch's paths: torch.optim.adamw, torch.utils.model_zoo,
torch.cpu.amp, torch.functional (each checked against torch)."""
import importlib
import warnings

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_optim_adamw_and_model_zoo(lib):
    name = lib.__name__
    assert importlib.import_module(f"{name}.optim.adamw").AdamW is lib.optim.AdamW
    mz = importlib.import_module(f"{name}.utils.model_zoo")
    assert mz.load_url is lib.hub.load_state_dict_from_url


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_cpu_amp_deprecated_spellings(lib):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with lib.cpu.amp.autocast():
            y = lib.ones(2, 3) @ lib.ones(3, 2)
        with lib.cpu.amp.autocast(dtype=lib.float16, enabled=False):
            z = lib.ones(2, 3) @ lib.ones(3, 2)
        scaler = lib.cpu.amp.GradScaler(init_scale=8.0)
    assert y.dtype == lib.bfloat16 and z.dtype == lib.float32
    assert isinstance(scaler, lib.amp.GradScaler) and scaler.get_scale() == 8.0
    assert float(scaler.scale(lib.ones(())).item()) == 8.0
    msgs = [str(m.message) for m in w if m.category is FutureWarning]
    assert msgs == [
        "`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
        "`torch.amp.autocast('cpu', args...)` instead."] * 2 + [
        "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
        "`torch.amp.GradScaler('cpu', args...)` instead."]


def test_functional_module():
    # an attribute after a plain import, as torch's (opt_einsum_fx reads torch.functional.einsum)
    import subprocess
    import sys
    for lib in ("torch", "ember"):
        code = f"import {lib}; assert {lib}.functional.einsum is {lib}.einsum"
        assert subprocess.run([sys.executable, "-c", code]).returncode == 0, lib
    import torch.functional as tf
    import ember.functional as ef
    assert set(ef.__all__) == set(tf.__all__)
    for n in ef.__all__:
        assert getattr(ef, n) is getattr(ember, n), n
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(ef.einsum("ij->ji", ember.tensor(a)).numpy(),
                                  tf.einsum("ij->ji", torch.tensor(a)).numpy())


def test_assert_and_fx_records_it():
    import torch.fx  # noqa: F401
    graphs = []
    for lib in (torch, ember):
        lib._assert(True, "m")
        lib._assert(lib.tensor(True), "m")
        for cond in (False, 0, lib.tensor(False)):
            with pytest.raises(AssertionError, match="bad size"):
                lib._assert(cond, "bad size")

        def f(x):
            lib._assert(x.shape[0] == 3, "need 3")
            return x + 1
        g = lib.fx.symbolic_trace(f)
        graphs.append([(n.op, getattr(n.target, "__name__", n.target)) for n in g.graph.nodes])
        assert g(lib.ones(3)).sum().item() == 6.0
        with pytest.raises(AssertionError, match="need 3"):
            g(lib.ones(2))
    assert graphs[0] == graphs[1]


def test_einsum_list_operands_reach_fx_flat():
    # torch.einsum(eq, [a, b]) dispatches as (eq, a, b): opt_einsum_fx (e3nn) reads each
    # operand node's shape
    args = []
    for lib in (torch, ember):
        for pack in (list, tuple):
            g = lib.fx.symbolic_trace(lambda a, b: lib.einsum("ij,jk->ik", pack((a, b))))
            node = [n for n in g.graph.nodes if n.op == "call_function"][0]
            args.append(tuple(a if isinstance(a, str) else a.name for a in node.args))
            np.testing.assert_array_equal(g(lib.ones(2, 3), lib.ones(3, 4)).numpy(),
                                          np.full((2, 4), 3.0, np.float32))
    assert args[:2] == args[2:] == [("ij,jk->ik", "a", "b")] * 2
