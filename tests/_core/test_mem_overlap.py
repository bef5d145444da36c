"""torch's memory-overlap checks of in-place writes and ``out=`` (ember._core.inplace.
check_overlap): a target whose elements share memory (an expanded view) and an operand that
partially overlaps the target are refused with torch's RuntimeError; the same memory, disjoint
views, views that are not dense and the ops torch does not check compute as torch's."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember._core.tensor import _version_of

INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")
PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.")


def _a(lib):
    return lib.arange(6.)


def _m(lib):
    return lib.arange(9.).reshape(3, 3)


def _e(lib):
    return lib.ones(4).expand(3, 4)


def _i(lib, *v):
    return lib.tensor(list(v))


def _setitem(t, k, v):
    t[k] = v
    return t


CASES = {
    # partial overlap of an operand and the target
    "shift_add_": lambda L: (lambda a: a[1:].add_(a[:-1]))(_a(L)),
    "t_add_": lambda L: (lambda x: x.add_(x.t()))(_m(L)),
    "view_1x6_add_": lambda L: (lambda x: x.view(1, 6).add_(x))(_a(L)),  # same bytes, strides
    "shift_copy_": lambda L: (lambda a: a[1:].copy_(a[:-1]))(_a(L)),
    "t_copy_": lambda L: (lambda x: x.copy_(x.t()))(_m(L)),
    "copy_0dim_self": lambda L: (lambda a: a.copy_(a[0]))(_a(L)),
    "shift_mul_": lambda L: (lambda a: a[1:].mul_(a[:-1]))(_a(L)),
    "shift_lerp_": lambda L: (lambda a: a[1:].lerp_(a[:-1], 0.5))(_a(L)),
    "addcmul_second": lambda L: (lambda a: a[:5].addcmul_(L.ones(5), a[1:]))(_a(L)),
    "t_pow_": lambda L: (lambda x: x.pow_(x.t()))(_m(L)),
    "t_clamp_tensor": lambda L: (lambda x: x.clamp_(min=x.t()))(_m(L)),
    "int_view_mul_": lambda L: (lambda a: a.view(L.int32)[1:].mul_(a.view(L.int32)[:-1]))(
        _a(L)),
    "setitem_shift": lambda L: (lambda a: _setitem(a, slice(1, None), a[:-1]))(_a(L)),
    "index_add_": lambda L: (lambda a: a[1:].index_add_(0, _i(L, 0, 1), a[:2]))(_a(L)),
    "index_copy_": lambda L: (lambda a: a[1:].index_copy_(0, _i(L, 0, 1), a[:2]))(_a(L)),
    "scatter_": lambda L: (lambda a: a[1:].scatter_(0, _i(L, 0, 1), a[:2]))(_a(L)),
    "index_put_value": lambda L: (lambda a: a[1:].index_put_((_i(L, 0, 1),), a[:2]))(_a(L)),
    "put_": lambda L: (lambda a: a[1:].put_(_i(L, 0, 1), a[:2]))(_a(L)),
    # out= overlapping an input
    "add_out": lambda L: (lambda a: L.add(a[:-1], a[1:], out=a[1:]))(_a(L)),
    "add_out_scalar": lambda L: (lambda a: L.add(a[:-1], 1, out=a[1:]))(_a(L)),
    "neg_out_t": lambda L: (lambda x: L.neg(x.t(), out=x))(_m(L)),
    "neg_out_resized": lambda L: (lambda x: L.neg(x.t(), out=x[:2]))(_m(L)),  # before resize
    "sigmoid_out": lambda L: (lambda a: L.sigmoid(a[:5], out=a[1:]))(_a(L)),
    "maximum_out": lambda L: (lambda x: L.maximum(x, x.t(), out=x))(_m(L)),
    "clamp_out": lambda L: (lambda a: L.clamp(a[:5], 0, 3, out=a[1:]))(_a(L)),
    "where_out": lambda L: (lambda a: L.where(a[:5] > 2, a[:5], a[:5], out=a[1:]))(_a(L)),
    "cat_out": lambda L: (lambda a: L.cat([a[:2], a[:1]], out=a[1:4]))(_a(L)),
    "cat_out_same": lambda L: (lambda a: L.cat([a[:3]], out=a[:3]))(_a(L)),  # cat: any
    "stack_out": lambda L: (lambda a: L.stack([a[:1], a[1:2]], out=a[1:3].view(2, 1)))(_a(L)),
    "index_select_out": lambda L: (lambda a: L.index_select(a[:5], 0, _i(L, 0, 1),
                                                            out=a[1:3]))(_a(L)),
    "gather_out": lambda L: (lambda a: L.gather(a[:5], 0, _i(L, 0, 1), out=a[1:3]))(_a(L)),
    "cumsum_out": lambda L: (lambda a: L.cumsum(a[:5], 0, out=a[1:]))(_a(L)),
    "take_along_dim_out": lambda L: (lambda a: L.take_along_dim(a[:5], _i(L, 0, 1),
                                                                out=a[1:3]))(_a(L)),
    "index_add_out": lambda L: (lambda a: L.index_add(a[:5], 0, _i(L, 0, 1), a[:2],
                                                      out=a[1:6]))(_a(L)),
    "scatter_out": lambda L: (lambda a: L.scatter(a[:5], 0, _i(L, 0, 1), a[:2],
                                                  out=a[1:6]))(_a(L)),
    "masked_select_out": lambda L: (lambda a: L.masked_select(a[:5], a[:5] > 1, out=a[1:4]))(
        _a(L)),
    "special_i0_out": lambda L: (lambda a: L.special.i0(a[:5], out=a[1:6]))(_a(L)),
    "special_xlogy_out": lambda L: (lambda a: L.special.xlogy(a[:5], a[:5], out=a[1:6]))(
        _a(L)),
    "logcumsumexp_out": lambda L: (lambda a: L.logcumsumexp(a[:5], 0, out=a[1:6]))(_a(L)),
    "topk_out": lambda L: (lambda a: L.topk(a[:5], 2, out=(a[1:3], L.empty(2, dtype=L.long)))[0])(
        _a(L)),
    "sort_out": lambda L: (lambda a: L.sort(a[:5], out=(a[1:], L.empty(5, dtype=L.long)))[0])(
        _a(L)),
    # a target whose elements share memory
    "expand_add_": lambda L: _e(L).add_(1),
    "expand_copy_": lambda L: _e(L).copy_(L.ones(3, 4)),
    "expand_copy_row": lambda L: _e(L).copy_(L.ones(4)),
    "expand_fill_0dim": lambda L: _e(L).fill_(L.tensor(5.)),
    "expand_setitem": lambda L: _setitem(_e(L), slice(None), 5.),
    "expand_neg_": lambda L: _e(L).neg_(),
    "expand_exp_": lambda L: _e(L).exp_(),
    "expand_clamp_": lambda L: _e(L).clamp_(0, 1),
    "expand_relu_": lambda L: _e(L).relu_(),
    "expand_relu_inplace": lambda L: L.nn.functional.relu(_e(L), inplace=True),
    "expand_normal_": lambda L: _e(L).normal_(),
    "expand_uniform_": lambda L: _e(L).uniform_(),
    "expand_bernoulli_": lambda L: _e(L).bernoulli_(),
    "expand_lerp_": lambda L: _e(L).lerp_(L.zeros(3, 4), 0.5),
    "expand_addmm_": lambda L: _e(L).addmm_(L.ones(3, 2), L.ones(2, 4)),
    "expand_masked_scatter_": lambda L: _e(L).masked_scatter_(L.ones(3, 4, dtype=L.bool),
                                                              L.zeros(12)),
    "expand_scatter_": lambda L: _e(L).scatter_(0, L.tensor([[0]]), 5.),
    "expand_index_add_": lambda L: _e(L).index_add_(0, _i(L, 0), L.ones(1, 4)),
    "expand_cumsum_": lambda L: (lambda a: a.expand(2, 6).cumsum_(1))(_a(L)),
    "expand_add_out": lambda L: L.add(L.ones(3, 4), 1, out=_e(L)),
    "expand_mm_out": lambda L: L.mm(L.ones(3, 2), L.ones(2, 4), out=_e(L)),
    "expand_cat_out": lambda L: L.cat([L.ones(2, 4), L.ones(1, 4)], out=_e(L)),
    "expand_cumsum_out": lambda L: L.cumsum(L.ones(3, 4), 1, out=_e(L)),
    "expand_recorded": lambda L: (L.ones(1, requires_grad=True) * 1).expand(3).add_(1),
    # allowed: the same memory, disjoint or non-dense views, unchecked ops
    "same_add_": lambda L: (lambda x: x.add_(x))(_m(L)),
    "detach_add_": lambda L: (lambda x: x.add_(x.detach()))(_m(L)),
    "view23_add_": lambda L: (lambda x: x.view(2, 3).add_(x.view(2, 3)))(_a(L)),
    "add_out_same": lambda L: (lambda a: L.add(a, a, out=a))(_a(L)),
    "disjoint_add_": lambda L: (lambda a: a[3:].add_(a[:3]))(_a(L)),
    "disjoint_bcast": lambda L: (lambda a: a.view(2, 3)[1:].add_(a[:3]))(_a(L)),
    "disjoint_0dim": lambda L: (lambda a: a[1:].add_(a[0]))(_a(L)),
    "stride2_add_": lambda L: (lambda a: a[::2].add_(a[1::2]))(_a(L)),
    "stride2_overlap": lambda L: (lambda a: a[2::2].add_(a[:-2:2]))(_a(L)),  # not dense
    "diag_add_": lambda L: (lambda x: x.diagonal().add_(x[0]))(_m(L)),
    "complex_parts": lambda L: (lambda z: z.real.add_(z.imag))(L.ones(3, dtype=L.complex64)),
    "expand_operand_": lambda L: (lambda a: a[:5].add_(a[1:2].expand(5)))(_a(L)),
    "expand_size1": lambda L: L.ones(1, 4).expand(1, 4).add_(1),
    "expand_empty": lambda L: L.ones(0).expand(3, 0).add_(1),
    "expand_fill_": lambda L: _e(L).fill_(2),
    "fill_self_elem": lambda L: (lambda a: a.fill_(a[2]))(_a(L)),  # value read first
    "masked_fill_self_elem": lambda L: (lambda a: a.masked_fill_(a > 2, a[0]))(_a(L)),
    "index_fill_self_elem": lambda L: (lambda a: a.index_fill_(0, _i(L, 1, 3), a[5]))(_a(L)),
    "setitem_self_elem": lambda L: (lambda a: _setitem(a, slice(None), a[2]))(_a(L)),
    "setitem_mask_self_elem": lambda L: (lambda a: _setitem(a, a > 2, a[0]))(_a(L)),
    "setitem_index_self_elem": lambda L: (lambda a: _setitem(a, _i(L, 1, 3), a[5]))(_a(L)),
    "index_put_self_elem": lambda L: (lambda a: a.index_put_((_i(L, 1, 3),), a[5]))(_a(L)),
    "mul_self_elem": lambda L: (lambda a: a.mul_(a[2]))(_a(L)),
    "copy_self_elem": lambda L: (lambda a: a.copy_(a[2]))(_a(L)),
    "expand_setitem_0dim": lambda L: _setitem(_e(L), slice(None), L.tensor(5.0)),
    "expand_setitem_mask_0dim": lambda L: _setitem(_e(L), L.ones(3, 4, dtype=L.bool),
                                                   L.tensor(5.0)),
    "fill_view_self_elem": lambda L: (lambda a: a[1:].fill_(a[2]))(_a(L)),
    "expand_zero_": lambda L: _e(L).zero_(),
    "expand_conj_physical_": lambda L: _e(L).conj_physical_(),
    "expand_triu_": lambda L: _e(L).triu_(),
    "expand_setitem_row": lambda L: _setitem(_e(L), 0, 5.),
    # writes torch lets through the aliases of an expanded target: every alias sees them
    "expand_index_put_": lambda L: _e(L).index_put_((_i(L, 0),), L.tensor(5.)),
    "expand_index_put_acc": lambda L: _e(L).index_put_((_i(L, 0),), L.tensor(5.),
                                                       accumulate=True),
    "expand_index_fill_": lambda L: _e(L).index_fill_(0, _i(L, 0), 2.0),
    "expand_masked_fill_": lambda L: _e(L).masked_fill_(L.eye(3, 4, dtype=L.bool), 2.0),
    "expand_masked_fill_row": lambda L: _e(L).masked_fill_(
        L.tensor([[True, False, False, True]] + [[False] * 4] * 2), 7.0),
    "expand_setitem_mask": lambda L: _setitem(_e(L), L.ones(3, 4, dtype=L.bool), 5.),
    "masked_fill_value": lambda L: (lambda a: a[1:].masked_fill_(a[:-1] > 2, a[0]))(_a(L)),
    "sum_out": lambda L: (lambda a: L.sum(a.view(2, 3)[:, :2], 1, out=a[4:6]))(_a(L)),
    "sum_out_expand": lambda L: L.sum(L.ones(3, 4), 0, out=L.zeros(1).expand(4)),
    "neg_noncontig_out": lambda L: (lambda a: L.neg(a[1:4], out=a[::2]))(_a(L)),
}


_RANDOM = ("expand_normal_", "expand_uniform_", "expand_bernoulli_")
# allowed, but torch's value is an artifact of its loop order reading memory it has written
# (an expanded operand, a reduction into an out overlapping its input): only no error asked
_ALIASED = ("expand_operand_", "sum_out", "sum_out_expand")


def _run(lib, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = CASES[name](lib)
        except RuntimeError as e:
            return "error", str(e)
    if isinstance(r, tuple):
        r = r[0]
    return "value", tuple(r.shape) if name in _RANDOM + _ALIASED else r.detach().numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_overlap_as_torch(name):
    want = _run(torch, name)
    got = _run(ember, name)
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert want[1] in (INTERNAL, PARTIAL)
        assert got[1] == want[1]
    elif name in _RANDOM + _ALIASED:
        assert got[1] == want[1]
    else:
        np.testing.assert_array_equal(got[1], want[1])


def test_refused_write_changes_nothing():
    a = ember.arange(6.)
    v = _version_of(a)[0]
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        a[1:].add_(a[:-1])
    assert _version_of(a)[0] == v and a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        ember.exp(a[:-1], out=a[1:])
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_overlap_check_reads_no_data():
    # the check compares addresses and strides only: meta tensors and tensors owning their
    # memory are never refused
    from ember._core.inplace import check_overlap
    x = ember.ones(3, 4)
    check_overlap(x._data, (ember.ones(3, 4), 2.0, None), "add")
    m = ember.empty(4, device="meta").expand(3, 4)
    check_overlap(m._data, (), "add")


def test_expanded_fill_warns_as_torch():
    for lib in (torch, ember):
        for f in (lambda: _e(lib).index_fill_(0, _i(lib, 0), 2.0),
                  lambda: _e(lib).masked_fill_(lib.ones(3, 4, dtype=lib.bool), 2.0)):
            with pytest.warns(UserWarning, match="on expanded tensors is deprecated") as w:
                f()
            assert w[0].filename == __file__  # the user's line


@pytest.mark.parametrize("kw", [{}, {"out_int32": True}])
@pytest.mark.parametrize("dt", ["float32", "int64", "int32"])
def test_searchsorted_out_dtype_as_torch(kw, dt):
    def run(lib):
        a = lib.arange(8.0)
        res = []
        for f in (lambda o: lib.bucketize(a[:3], a[:5], out=o, **kw),
                  lambda o: lib.searchsorted(a[:5], a[:3], out=o, **kw)):
            try:
                res.append(f(lib.empty(3, dtype=getattr(lib, dt))).tolist())
            except RuntimeError as e:
                res.append(str(e))
        return res
    assert run(ember) == run(torch)
