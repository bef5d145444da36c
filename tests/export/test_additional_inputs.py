"""ember.export.AdditionalInputs: dynamic shapes inferred from several example inputs, and
Dim.DYNAMIC's relaxed ties; against torch.export (the test-only oracle)."""
import warnings

import numpy as np
import pytest
import torch

import ember


def _mod(lib):
    class M(lib.nn.Module):
        def forward(self, x, y):
            return x.sum(1) + y
    return M()


def _shapes(lib, *shapes):
    return tuple(lib.ones(*s) for s in shapes)


def _ai(lib, *examples):
    ai = lib.export.AdditionalInputs()
    for ex in examples:
        ai.add(_shapes(lib, *ex))
    return ai


def _canon(tree):
    """torch's and ember's DYNAMIC hints as one token, for comparing the inferred specs."""
    if isinstance(tree, dict):
        return {k: _canon(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return tuple(_canon(v) for v in tree)
    return None if tree is None else "DYNAMIC" if "DYNAMIC" in repr(tree) else tree


def test_inferred_dynamic_shapes_and_program_match_torch():
    examples = [((5, 3), (5,)), ((7, 3), (7,))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tai, eai = _ai(torch, *examples), _ai(ember, *examples)
        ts = tai.dynamic_shapes(_mod(torch), _shapes(torch, (4, 3), (4,)))
        es = eai.dynamic_shapes(_mod(ember), _shapes(ember, (4, 3), (4,)))
        assert _canon(es) == _canon(ts) == {"x": ("DYNAMIC", None), "y": ("DYNAMIC",)}
        tep = torch.export.export(_mod(torch), _shapes(torch, (4, 3), (4,)), dynamic_shapes=tai)
    eep = ember.export.export(_mod(ember), _shapes(ember, (4, 3), (4,)), dynamic_shapes=eai)
    # one symbol: the tie of x's and y's first dims is allowed (Dim.DYNAMIC is relaxed)
    assert len(eep.range_constraints) == len(tep.range_constraints) == 1
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((9, 3)).astype("f4"), rng.standard_normal(9).astype("f4")
    np.testing.assert_allclose(eep.module()(ember.tensor(x), ember.tensor(y)).numpy(),
                               tep.module()(torch.tensor(x), torch.tensor(y)).numpy(),
                               rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"shape\[1\]"):   # the static dim stays static
        eep.module()(*_shapes(ember, (9, 4), (9,)))
    with pytest.raises(AssertionError):
        tep.module()(*_shapes(torch, (9, 4), (9,)))


def test_additional_input_the_program_refuses_fails_export_as_torch():
    bad = [((5, 3), (5,)), ((7, 3), (6,))]   # x and y differ: add cannot broadcast them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="to be equal to 7, but got 6"):
            torch.export.export(_mod(torch), _shapes(torch, (4, 3), (4,)),
                                dynamic_shapes=_ai(torch, *bad))
    with pytest.raises(RuntimeError, match="to be equal to 7.*but got 6"):
        ember.export.export(_mod(ember), _shapes(ember, (4, 3), (4,)),
                            dynamic_shapes=_ai(ember, *bad))


def test_additional_inputs_errors_match_torch():
    for lib in (torch, ember):
        ai = lib.export.AdditionalInputs()
        with pytest.raises(AssertionError, match="must be a tuple"):
            ai.add([lib.ones(2)])
        with pytest.raises(AssertionError, match="must be None or a dict"):
            ai.add((lib.ones(2),), [1])
    rank = [((5, 3, 1), (5,))]
    with pytest.raises(ValueError, match="differing lengths"):
        _ai(ember, *rank).dynamic_shapes(_mod(ember), _shapes(ember, (4, 3), (4,)))
    ai = ember.export.AdditionalInputs()
    ai.add((ember.ones(2), "b"))
    with pytest.raises(ValueError, match="differing values"):
        ai.dynamic_shapes(_mod(ember), (ember.ones(2), "a"))
    tai = torch.export.AdditionalInputs()
    tai.add((torch.ones(2), "b"))
    with pytest.raises(ValueError, match="differing values"):
        tai.dynamic_shapes(_mod(torch), (torch.ones(2), "a"))


def test_shapes_collection_keys_are_the_callers_tensors():
    # export copies its example inputs; the collection must be read before that
    counts = []
    for lib in (torch, ember):
        x, y = lib.ones(4, 3), lib.ones(4)
        sc = lib.export.ShapesCollection()
        b = lib.export.Dim("b")
        sc[x] = {0: b}
        sc[y] = {0: b}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = lib.export.export(_mod(lib), (x, y), dynamic_shapes=sc)
        assert tuple(ep.module()(lib.ones(6, 3), lib.ones(6)).shape) == (6,)
        counts.append(len(ep.range_constraints))
    assert counts == [1, 1]
