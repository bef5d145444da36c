"""ember.export.register_dataclass: dataclasses as exported programs' inputs and outputs,
against torch.export's behaviour (the test-only oracle)."""
import dataclasses

import numpy as np
import pytest
import torch

import ember
from ember.func._pytree import tree_flatten, tree_unflatten


def _pair(name):
    """The same dataclass defined for ember and for torch, each registered once."""
    out = []
    for lib in (ember, torch):
        @dataclasses.dataclass
        class Inp:
            feature: object
            scale: object
            bias: int = 1

        @dataclasses.dataclass
        class Out:
            res: object
            extra: object = None
        Inp.__qualname__ = Out.__qualname__ = name
        lib.export.register_dataclass(Inp)
        lib.export.register_dataclass(Out)
        out.append((Inp, Out))
    return out


def test_dataclass_input_and_output_match_torch():
    (EI, EO), (TI, TO) = _pair("DC1")

    def module(lib, Out):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(3, 2)

            def forward(self, x):
                return Out(res=self.lin(x.feature * x.scale) + x.bias)
        return M()
    tm, em = module(torch, TO), module(ember, EO)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    f, s = rng.standard_normal((4, 3)).astype("f4"), rng.standard_normal((4, 3)).astype("f4")
    tep = torch.export.export(tm, (TI(torch.tensor(f), torch.tensor(s), 2),))
    eep = ember.export.export(em, (EI(ember.tensor(f), ember.tensor(s), 2),))
    tph = [n.name for n in tep.graph.nodes if n.op == "placeholder" and "feature" in n.name
           or n.op == "placeholder" and "scale" in n.name]
    eph = [n.name for n in eep.graph.nodes if n.op == "placeholder" and n.name.startswith("x_")]
    assert eph == tph == ["x_feature", "x_scale"]
    f2 = rng.standard_normal((4, 3)).astype("f4")
    tr = tep.module()(TI(torch.tensor(f2), torch.tensor(s), 2))
    er = eep.module()(EI(ember.tensor(f2), ember.tensor(s), 2))
    assert type(er) is EO and er.extra is None and tr.extra is None
    np.testing.assert_allclose(er.res.detach().numpy(), tr.res.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    # a baked-in int field that differs at call time is refused, as in torch
    with pytest.raises(AssertionError):
        tep.module()(TI(torch.tensor(f2), torch.tensor(s), 3))
    with pytest.raises(RuntimeError, match="specialized"):
        eep.module()(EI(ember.tensor(f2), ember.tensor(s), 3))


def test_dataclass_none_fields_stay_in_the_spec():
    (EI, _), (TI, _) = _pair("DC2")
    import torch.utils._pytree as tp
    tl, ts = tp.tree_flatten(TI(1, None, 3))
    el, es = tree_flatten(EI(1, None, 3))
    assert el == tl == [1, 3]
    back = tree_unflatten([5, 6], es)
    assert type(back) is EI and (back.feature, back.scale, back.bias) == (5, None, 6)
    assert tree_flatten(EI(1, 2, 3))[1] != es   # which fields were None is structure


def test_register_dataclass_errors_match_torch():
    class NotADataclass:
        pass
    with pytest.raises(ValueError, match="not a dataclass") as te:
        torch.export.register_dataclass(NotADataclass)
    with pytest.raises(ValueError, match="not a dataclass") as ee:
        ember.export.register_dataclass(NotADataclass)
    assert str(ee.value) == str(te.value)


def test_dynamic_shapes_of_dataclass_fields_as_torch():
    results = []
    for lib in (torch, ember):
        @dataclasses.dataclass
        class Two:
            a: object
            b: object
        lib.export.register_dataclass(Two)

        class M(lib.nn.Module):
            def forward(self, i):
                return i.a.sum(1) + i.b
        d = lib.export.Dim("d")
        ex = (Two(lib.ones(4, 3), lib.ones(4)),)
        ep = lib.export.export(M(), ex, dynamic_shapes={"i": [{0: d}, {0: d}]})
        out = ep.module()(Two(lib.ones(6, 3), lib.ones(6)))
        with pytest.raises(ValueError, match="Node type mismatch"):
            lib.export.export(M(), ex, dynamic_shapes={"i": {"a": {0: d}, "b": {0: d}}})
        results.append((len(ep.range_constraints), tuple(out.shape)))
    assert results[0] == results[1] == (1, (6,))
