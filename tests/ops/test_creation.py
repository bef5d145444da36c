"""Creation functions vs torch: values, dtype inference, memory sharing, errors."""
import re

import numpy as np
import pytest
import torch

import ember


def _same(e, t):
    assert isinstance(e, ember.Tensor)
    assert str(e.dtype)[6:] == str(t.dtype)[6:], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    ta = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    ea = e._data.astype(np.float32) if e.dtype is ember.bfloat16 else e._data
    np.testing.assert_allclose(ea, ta, rtol=1e-6, atol=1e-6)


CASES = {
    "ints": lambda lib: lib.tensor([1, 2, 3]),
    "floats": lambda lib: lib.tensor([1.0, 2.5]),
    "mixed int float": lambda lib: lib.tensor([1, 2.5]),
    "bools": lambda lib: lib.tensor([True, False]),
    "bool int": lambda lib: lib.tensor([True, 2]),
    "complex": lambda lib: lib.tensor([1, 2j]),
    "nested": lambda lib: lib.tensor([[1, 2], [3, 4]]),
    "scalar": lambda lib: lib.tensor(3.5),
    "empty": lambda lib: lib.tensor([]),
    "dtype": lambda lib: lib.tensor([1.7, -2.2], dtype=lib.int32),
    "float16": lambda lib: lib.tensor([1.5], dtype=lib.float16),
    "numpy f64": lambda lib: lib.tensor(np.array([1.5, 2.0])),
    "numpy i32": lambda lib: lib.tensor(np.array([1, 2], dtype=np.int32)),
    "numpy scalar": lambda lib: lib.tensor(np.float64(2.5)),
    "tuple": lambda lib: lib.tensor((1, 2)),
    "as_tensor list": lambda lib: lib.as_tensor([1, 2.0]),
    "as_tensor dtype": lambda lib: lib.as_tensor([1, 2], dtype=lib.float64),
    "zeros": lambda lib: lib.zeros(2, 3),
    "zeros tuple": lambda lib: lib.zeros((2, 3), dtype=lib.int64),
    "zeros empty": lambda lib: lib.zeros(0),
    "zeros 0d": lambda lib: lib.zeros(()),
    "ones": lambda lib: lib.ones(3, dtype=lib.bool),
    "full float": lambda lib: lib.full((2, 2), 1.5),
    "full int": lambda lib: lib.full((2,), 7),
    "full bool": lambda lib: lib.full((2,), True),
    "full complex": lambda lib: lib.full((2,), 1 + 1j),
    "full dtype": lambda lib: lib.full((2,), 7, dtype=lib.float16),
    "zeros_like": lambda lib: lib.zeros_like(lib.tensor([1, 2])),
    "ones_like dtype": lambda lib: lib.ones_like(lib.tensor([1, 2]), dtype=lib.float32),
    "full_like": lambda lib: lib.full_like(lib.tensor([1, 2]), 3.7),
    "full_like float": lambda lib: lib.full_like(lib.tensor([1.0, 2.0]), 3),
    "empty_like shape": lambda lib: lib.empty_like(lib.ones(2, 3)).fill_(1),
    "empty shape": lambda lib: lib.empty(2, 3, dtype=lib.int16).fill_(2),
    "arange int": lambda lib: lib.arange(5),
    "arange start end": lambda lib: lib.arange(2, 9, 3),
    "arange neg step": lambda lib: lib.arange(5, -4, -2),
    "arange float": lambda lib: lib.arange(0, 1, 0.1),
    "arange float end": lambda lib: lib.arange(3.5),
    "arange float start": lambda lib: lib.arange(0.5, 3),
    "arange dtype": lambda lib: lib.arange(5, dtype=lib.float64),
    "arange int dtype float step": lambda lib: lib.arange(0, 2, 0.5, dtype=lib.float16),
    "arange empty": lambda lib: lib.arange(3, 3),
    "arange tensor bounds": lambda lib: lib.arange(lib.tensor(4)),
    "arange float steps accumulate": lambda lib: lib.arange(-1.0, 1.0, 0.3),
    "linspace": lambda lib: lib.linspace(0, 1, 5),
    "linspace one": lambda lib: lib.linspace(2, 3, 1),
    "linspace zero": lambda lib: lib.linspace(2, 3, 0),
    "linspace int dtype": lambda lib: lib.linspace(0, 10, 4, dtype=lib.int64),
    "linspace reverse": lambda lib: lib.linspace(3, -3, 7),
    "linspace complex": lambda lib: lib.linspace(0, 1 + 1j, 3),
    "linspace f64": lambda lib: lib.linspace(0, 1, 3, dtype=lib.float64),
    "logspace": lambda lib: lib.logspace(0, 3, 4),
    "logspace base": lambda lib: lib.logspace(0, 3, 4, base=2.0),
    "logspace f64": lambda lib: lib.logspace(-2, 2, 5, dtype=lib.float64),
    "eye": lambda lib: lib.eye(3),
    "eye rect": lambda lib: lib.eye(2, 4, dtype=lib.int64),
    "tril": lambda lib: lib.tril(lib.arange(1.0, 10).reshape(3, 3)),
    "triu k": lambda lib: lib.triu(lib.arange(1.0, 13).reshape(3, 4), 1),
    "tril neg k": lambda lib: lib.tril(lib.arange(1, 13).reshape(4, 3), -1),
    "scalar_tensor": lambda lib: lib.scalar_tensor(3),
    "new_tensor": lambda lib: lib.ones(2, dtype=lib.int32).new_tensor([1.5, 2.5]),
    "new_zeros": lambda lib: lib.ones(2, dtype=lib.int32).new_zeros(3),
    "new_full": lambda lib: lib.ones(2, dtype=lib.float64).new_full((2,), 4),
    "new_ones": lambda lib: lib.ones(2, dtype=lib.int8).new_ones((2, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_creation_matches_torch(name):
    _same(CASES[name](ember), CASES[name](torch))


def test_from_numpy_and_as_tensor_share_memory():
    a = np.zeros(3, dtype=np.float32)
    e = ember.from_numpy(a)
    a[1] = 7
    assert e.tolist() == [0.0, 7.0, 0.0]
    e.add_(1)
    assert a.tolist() == [1.0, 8.0, 1.0]
    b = np.arange(4)
    assert ember.as_tensor(b).data_ptr() == b.__array_interface__["data"][0]
    assert ember.as_tensor(b).dtype is ember.int64
    c = ember.tensor(b)
    b[0] = 99
    assert c[0].item() == 0  # tensor() copies
    t = ember.ones(2)
    assert ember.as_tensor(t) is t
    assert ember.as_tensor(b, dtype=ember.float32).data_ptr() != b.__array_interface__["data"][0]


def test_from_numpy_rejects_non_arrays():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.from_numpy([1, 2])


def test_creation_requires_grad_and_errors():
    x = ember.zeros(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert ember.tensor([1.0], requires_grad=True).requires_grad
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.zeros(-1)
        with pytest.raises(RuntimeError):
            lib.arange(0, 5, 0)
        with pytest.raises(RuntimeError):
            lib.arange(0, 5, -1)
        with pytest.raises(RuntimeError):
            lib.tensor([1, 2], requires_grad=True)
        with pytest.raises(ValueError):
            lib.tensor([[1, 2], [3]])
        with pytest.raises(RuntimeError):
            lib.linspace(0, 1, -1)


def test_tensor_from_tensor_warns_and_copies():
    src = ember.tensor([1.0, 2.0])
    with pytest.warns(UserWarning):
        t = ember.tensor(src)
    t.add_(1)
    assert src.tolist() == [1.0, 2.0]


def test_zeros_out():
    for lib in (torch, ember):
        out = lib.empty(0)
        r = lib.zeros(2, 3, out=out)
        assert r is out and tuple(out.shape) == (2, 3) and out.sum().item() == 0


def test_arange_out():
    e, t = ember.empty(0, dtype=ember.int64), torch.empty(0, dtype=torch.int64)
    ember.arange(4, out=e)
    torch.arange(4, out=t)
    assert e.tolist() == t.tolist()


def _bits(t):
    """The stored bits of a tensor of either library (bfloat16 viewed as int16)."""
    if str(t.dtype).endswith("bfloat16"):
        t = t.view(torch.int16 if isinstance(t, torch.Tensor) else ember.int16)
    return t.numpy()


_SPACED_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
                  "uint8", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", _SPACED_DTYPES)
@pytest.mark.parametrize("steps", [1, 2, 7, 100, 1001])
def test_linspace_bit_for_bit(dtype, steps):
    # torch counts up from start for the first half and down from end for the second, in the
    # output dtype with fused multiply-adds: ulp-level differences from a float64 linspace
    rng = np.random.default_rng(steps)
    for _ in range(20):
        a, b = rng.uniform(-100, 100, 2).tolist()
        if dtype == "uint8":
            a, b = abs(a), abs(b)
        if dtype.startswith("complex"):
            a, b = complex(a, rng.uniform(-5, 5)), complex(b, rng.uniform(-5, 5))
        t = torch.linspace(a, b, steps, dtype=getattr(torch, dtype))
        e = ember.linspace(a, b, steps, dtype=getattr(ember, dtype))
        np.testing.assert_array_equal(_bits(e), _bits(t), err_msg=f"{a} {b}")


@pytest.mark.parametrize("dtype", [d for d in _SPACED_DTYPES if not d.startswith("complex")])
@pytest.mark.parametrize("steps", [1, 2, 7, 100, 1001])
def test_logspace_bit_for_bit(dtype, steps):
    rng = np.random.default_rng(steps)
    for base in (10.0, 2.0, 1.5, 0.5, -2.0):
        a, b = rng.uniform(-8, 8, 2).tolist()
        if dtype == "uint8":
            a, b = abs(a), abs(b)
        args = (a, b, steps)
        try:
            t = torch.logspace(*args, base=base, dtype=getattr(torch, dtype))
        except RuntimeError as err:  # an int dtype that cannot hold a bound or the value
            with pytest.raises(RuntimeError, match="cannot be converted"):
                ember.logspace(*args, base=base, dtype=getattr(ember, dtype))
            assert "cannot be converted" in str(err)
            continue
        e = ember.logspace(*args, base=base, dtype=getattr(ember, dtype))
        np.testing.assert_array_equal(_bits(e), _bits(t), err_msg=f"{args} {base}")


@pytest.mark.parametrize("call", [
    lambda lib: lib.linspace(0, 300, 5, dtype=lib.uint8),
    lambda lib: lib.linspace(0, 3, 5, dtype=lib.bool),
    lambda lib: lib.logspace(50.0, 1, 1, dtype=lib.float32),
    lambda lib: lib.linspace(1 + 1j, 2, 3, dtype=lib.float32),
    lambda lib: lib.logspace(1 + 0j, 2, 3, dtype=lib.int64),
])
def test_spaced_errors_match_torch(call):
    with pytest.raises(Exception) as t:
        call(torch)
    with pytest.raises(type(t.value), match=re.escape(str(t.value))):
        call(ember)


def test_spaced_edges_match_torch():
    for call in (lambda lib: lib.linspace(-3, 1, 3, dtype=lib.uint8),  # wraps as in C
                 lambda lib: lib.linspace(2.7, -1, 1, dtype=lib.int32),
                 lambda lib: lib.linspace(300, 0, 0, dtype=lib.uint8),
                 lambda lib: lib.logspace(90.0, 1, 1, dtype=lib.float16),
                 lambda lib: lib.logspace(0, 40, 5, base=2.0, dtype=lib.int8)):
        np.testing.assert_array_equal(_bits(call(ember)), _bits(call(torch)))


def test_logspace_complex_bounds_give_complex():
    t, e = torch.logspace(1 + 1j, 2, 3), ember.logspace(1 + 1j, 2, 3)
    assert e.dtype == ember.complex64
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_full_keeps_the_sign_of_negative_zero():
    import torch
    for lib in (ember, torch):
        x = lib.ones(3, dtype=lib.float64)
        made = [lib.full((2,), -0.0), lib.full_like(x, -0.0), x.new_full((2,), -0.0),
                lib.full((2,), -0.0, dtype=lib.float64), lib.full((2,), complex(-0.0, -0.0)),
                lib.ones(2).fill_(-0.0)]
        signs = [lib.signbit(lib.view_as_real(t) if t.is_complex() else t).all().item()
                 for t in made]
        assert signs == [True] * len(made), lib.__name__
        assert not lib.signbit(lib.full((2,), 0.0)).any().item()
        assert (1 / lib.full((2,), -0.0)).tolist() == [-float("inf")] * 2
