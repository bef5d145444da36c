"""Edge values and dtypes the differential fuzzer (tests/fuzz) found ember answering
differently from torch: infinities, complex zeros, scalars converted to the tensor's dtype,
operation order at overflow, dtypes torch refuses.  Each test pins torch's result (or its
exception type)."""
import math

import numpy as np
import pytest
import torch

import ember


def _same(e, t, rtol=1e-6):
    """Close values, the same NaN positions, infinities, signs of zeros and dtypes (complex
    parts separately)."""
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    if t.dtype in (torch.float16, torch.bfloat16):
        e, t, rtol = e.float(), t.float(), max(rtol, 1e-2)
    ea, ta = e.detach().numpy(), t.detach().numpy()
    for part in ((np.real, np.imag) if ta.dtype.kind == "c" else (lambda a: a,)):
        np.testing.assert_allclose(part(ea), part(ta), rtol=rtol, atol=0)
        num = ~np.isnan(part(ta))
        np.testing.assert_array_equal(np.signbit(part(ea))[num], np.signbit(part(ta))[num])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_lgamma_of_minus_infinity_is_plus_infinity(dtype):
    x = [-math.inf, -1.0, 0.0, math.inf, 0.5, -2.5]
    _same(ember.lgamma(ember.tensor(x, dtype=getattr(ember, dtype))),
          torch.lgamma(torch.tensor(x, dtype=getattr(torch, dtype))))
    _same(ember.tensor(-math.inf).lgamma(), torch.tensor(-math.inf).lgamma())


def test_lgamma_of_subnormal_doubles_is_finite():
    x = [5e-324, -5e-324, 1e-310, -1e-310, 2.2e-308, 1e-300, 0.0, -0.0]
    _same(ember.lgamma(ember.tensor(x, dtype=ember.float64)),
          torch.lgamma(torch.tensor(x, dtype=torch.float64)))


@pytest.mark.parametrize("n", [0, 1, 2])
def test_polygamma_at_minus_infinity(n):
    x = [-math.inf, math.nan, -2.5, 0.5, 3.0]
    _same(ember.polygamma(n, ember.tensor(x, dtype=ember.float64)),
          torch.polygamma(n, torch.tensor(x, dtype=torch.float64)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_reciprocal_of_zero_and_reals(dtype):
    x = [0j, complex(-0.0, 0.0), 1 + 0j, 2 + 3j, complex(math.inf, 0), complex(0, math.inf),
         complex(math.nan, 0), 1e-300 + 0j]
    t = torch.tensor(x, dtype=getattr(torch, dtype))
    e = ember.tensor(x, dtype=getattr(ember, dtype))
    _same(ember.reciprocal(e), torch.reciprocal(t))
    _same(e.clone().reciprocal_(), t.clone().reciprocal_())


def _both(case, rtol=1e-6):
    """``case(lib)`` for torch and ember: the same values, or the same exception type."""
    try:
        t = case(torch)
    except Exception as exc:  # noqa: BLE001 - torch's refusal is the expected outcome
        with pytest.raises(type(exc)):
            case(ember)
        return
    _same(case(ember), t, rtol)


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
@pytest.mark.parametrize("value", [1.5, -1.5, 2.7, True, -1, 100000, 1e10, math.nan, 1 + 2j])
@pytest.mark.parametrize("dtype", ["int16", "uint8", "bool", "float32"])
def test_scatter_scalar_value_is_converted_to_self_dtype_first(dtype, value, reduce):
    # torch converts the value to self's dtype (1.5 multiplies an int tensor by 1) and
    # refuses one that overflows it
    kw = {} if reduce is None else {"reduce": reduce}
    _both(lambda lib: lib.tensor([2, 3, 0, 1]).to(getattr(lib, dtype)).scatter_(
        0, lib.tensor([0, 2]), value, **kw))


def test_addr_scales_vec1_before_the_outer_product():
    # torch computes beta * input + (alpha * vec1[i]) * vec2[j]: alpha * (-1.8e308) overflows
    # to -inf before the tiny vec2 entry can scale it down
    inp = np.array([[0, 2, 1, 0], [1, -1, 0, 1], [0, 0, 1, 1]], dtype=np.int16)
    v1 = np.array([-0.1184, 0.0, -1.797693e308])
    v2 = np.array([4.940656e-324, 2.225074e-308, np.nan, -0.6036])
    t = torch.addr(torch.tensor(inp), torch.tensor(v1), torch.tensor(v2), beta=2, alpha=3)
    e = ember.addr(ember.tensor(inp), ember.tensor(v1), ember.tensor(v2), beta=2, alpha=3)
    _same(e, t)
    i = torch.tensor(inp).long()
    _same(ember.addr(ember.tensor(inp).long(), ember.tensor([1, 2, 3]), ember.tensor([1, -2, 3, 4]),
                     alpha=2), torch.addr(i, torch.tensor([1, 2, 3]), torch.tensor([1, -2, 3, 4]),
                                          alpha=2))


_DTYPES = ("bool", "uint8", "int64", "float16", "bfloat16", "float32", "float64", "complex64")


def _t(lib, dtype, values=(1, 3, 2, 0)):
    return lib.tensor(values).to(getattr(lib, dtype))


@pytest.mark.parametrize("d1", _DTYPES)
@pytest.mark.parametrize("d2", ["bool", "int64", "float32"])
def test_addcdiv_refuses_integer_division_whatever_the_input_dtype(d1, d2):
    # torch judges tensor1 and tensor2 by their own dtypes, before promotion with input
    for n in (4, 0):
        _both(lambda lib: lib.addcdiv(lib.zeros(n, dtype=lib.float32), _t(lib, d1)[:n],
                                      _t(lib, d2, (2, 1, 4, 1))[:n], value=2))
        _both(lambda lib: lib.zeros(n, dtype=lib.float16).addcdiv_(_t(lib, d1)[:n],
                                                                   _t(lib, d2)[:n]))


def test_addcdiv_multiplies_by_value_before_dividing():
    # (value * t1) / t2, torch's order: the complex product's NaN/inf parts show through
    inf, nan = math.inf, math.nan
    t1 = [complex(inf, 1), complex(1, nan), complex(2, 3), complex(0, inf)]
    t2 = [complex(2, 0), complex(1, 1), complex(inf, 0), complex(1, 0)]
    _both(lambda lib: lib.addcdiv(lib.zeros(4, dtype=lib.complex128),
                                  lib.tensor(t1, dtype=lib.complex128),
                                  lib.tensor(t2, dtype=lib.complex128), value=2))


@pytest.mark.parametrize("dtype", _DTYPES)
def test_bincount_histc_nansum_nanmean_dtype_gates(dtype):
    for n in (4, 0):
        _both(lambda lib: lib.bincount(_t(lib, dtype)[:n]))
        _both(lambda lib: lib.histc(_t(lib, dtype)[:n], bins=4, min=0, max=3))
        _both(lambda lib: lib.nansum(_t(lib, dtype)[:n]))
        _both(lambda lib: lib.nanmean(_t(lib, dtype)[:n]))


@pytest.mark.parametrize("a", _DTYPES)
@pytest.mark.parametrize("b", ["int64", "float16", "float32", "float64"])
def test_polar_takes_two_float_tensors_of_one_dtype(a, b):
    _both(lambda lib: lib.polar(_t(lib, a), _t(lib, b, (0.5, 1, 2, 3))))


@pytest.mark.parametrize("dtype", _DTYPES)
def test_mvlgamma_and_multigammaln_dtypes(dtype):
    # integer inputs compute in the default float dtype; bool and complex are refused
    x = (1, 3, 5, 2)
    _both(lambda lib: lib.mvlgamma(_t(lib, dtype, x), 2))
    _both(lambda lib: lib.special.multigammaln(_t(lib, dtype, x), 3))


def _gamma_grad(lib, alpha, x):
    if lib is torch:
        return torch._standard_gamma_grad(alpha, x)
    from ember._core.op import REGISTRY  # private: reached from Gamma.rsample's backward
    return REGISTRY["standard_gamma_grad"](alpha, x)


@pytest.mark.parametrize("da", ["bool", "int64", "float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("dx", ["float32", "float64"])
def test_standard_gamma_grad_dtypes(da, dx):
    # torch's approximation and ember's numerical derivative agree to ~1e-4
    _both(lambda lib: _gamma_grad(lib, _t(lib, da, (1, 2, 3, 4)), _t(lib, dx, (0.5, 1, 2, 3))),
          rtol=1e-4)


def test_standard_gamma_grad_edges():
    inf, nan = math.inf, math.nan
    a = [0.0, nan, 1.0, 2.0, 1.0, -1.0, inf, 2.0, nan, 2.5]
    x = [1.0, 1.0, nan, -1.0, 0.0, 1.0, 1.0, inf, -1.0, 0.7]
    _both(lambda lib: _gamma_grad(lib, lib.tensor(a, dtype=lib.float64),
                                  lib.tensor(x, dtype=lib.float64)), rtol=1e-4)


@pytest.mark.parametrize("x, lo, hi", [
    ([1.0, math.inf, -7.0], 0, 0), ([math.nan, 1.0], 0, 0), ([1.0, 2.0], 0, math.inf),
    ([1.0, 2.0], math.nan, 3), ([1.0, 2.0], -math.inf, 3), ([], 0, 0), ([1.0, 1.0], 0, 0),
    ([1.0, 2.0, 3.0, 2.5], 0, 0), ([1.0, 2.0], 3, 1)])
def test_histc_refuses_a_range_that_is_not_finite(x, lo, hi):
    # min == max takes the data's range, infinities and NaN included
    _both(lambda lib: lib.histc(lib.tensor(x, dtype=lib.float32), bins=3, min=lo, max=hi))


@pytest.mark.parametrize("a, b", [("int64", "int64"), ("float32", "int64"), ("bool", "float32"),
                                  ("int32", "bool"), ("float16", "int32"), ("bfloat16", "float16"),
                                  ("complex64", "float32"), ("float16", "float16"),
                                  ("bfloat16", "bfloat16")])
@pytest.mark.parametrize("name", ["igamma", "igammac", "special.zeta", "special.xlog1py"])
def test_binary_special_functions_gate_on_the_promoted_dtype(name, a, b):
    # igamma(float, int) computes in float, igamma(int, int) is refused; zeta(half, float)
    # computes in float32
    def fn(lib):
        f = lib.special if name.startswith("special.") else lib
        return getattr(f, name.split(".")[-1])(_t(lib, a, (1, 2, 3, 1)), _t(lib, b, (2, 1, 3, 1)))
    _both(fn, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("idx", [[-1, 0], [4, 0], [2 ** 63 - 1, 0], [-2 ** 63, 1], [0, 3]])
def test_index_reduce_out_of_range_index_is_an_index_error(idx):
    _both(lambda lib: lib.zeros(4, 2).index_reduce_(0, lib.tensor(idx), lib.ones(2, 2), "prod"))


@pytest.mark.parametrize("xd, od", [("float32", "int64"), ("int64", "float32"), ("bool", "int8"),
                                    ("float32", "bool"), ("int64", "bool"), ("bool", "bool"),
                                    ("int8", "uint8"), ("float64", "float32")])
def test_sum_with_out_sums_in_outs_dtype(xd, od):
    def fn(lib):
        o = lib.empty(0, dtype=getattr(lib, od))
        lib.sum(_t(lib, xd, [[1.5, -2.5], [100.0, 0.0]]), 0, out=o)
        return o
    _both(fn)


@pytest.mark.parametrize("md, sd", [("bfloat16", "bfloat16"), ("float32", "int64"),
                                    ("int64", "float32"), ("bool", "bool"),
                                    ("float32", "complex64"), ("complex64", "complex64"),
                                    ("complex64", "float32"), ("bfloat16", "float32")])
def test_normal_tensor_dtypes(md, sd):
    # the output has mean's dtype (bfloat16 included); std may be any real dtype (the draws
    # are compared elsewhere: here the dtype, as a zero of it)
    _both(lambda lib: lib.normal(_t(lib, md, (0, 1, 2, 3)), _t(lib, sd, (1, 2, 1, 3)))
          .new_zeros(()))
