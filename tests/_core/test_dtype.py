"""dtypes and type promotion vs torch: promote_types, result_type, can_cast, finfo/iinfo,
set_default_dtype."""
import itertools

import pytest
import torch

import ember

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex64", "complex128"]


def E(name):
    return getattr(ember, name)


def T(name):
    return getattr(torch, name)


def _name(d):
    # Known difference: ember has no complex32 (NumPy has no such type); torch's
    # float16 + complex promotes to complex32, ember's to complex64.
    n = str(d).split(".")[-1]
    return "complex64" if n == "complex32" else n


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_promote_types_all_pairs(a, b):
    assert _name(ember.promote_types(E(a), E(b))) == _name(torch.promote_types(T(a), T(b)))


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_can_cast_all_pairs(a, b):
    assert ember.can_cast(E(a), E(b)) == torch.can_cast(T(a), T(b))


def _operands(lib, a, b, kinds):
    out = []
    for name, kind in zip((a, b), kinds):
        d = getattr(lib, name)
        if kind == "dim":
            out.append(lib.ones(2, dtype=d))
        else:
            out.append(lib.ones((), dtype=d))
    return out


@pytest.mark.parametrize("kinds", [("dim", "dim"), ("dim", "0d"), ("0d", "dim"), ("0d", "0d")])
def test_result_type_tensors(kinds):
    for a, b in itertools.product(NAMES, NAMES):
        e = ember.result_type(*_operands(ember, a, b, kinds))
        t = torch.result_type(*_operands(torch, a, b, kinds))
        assert _name(e) == _name(t), (a, b, kinds)


SCALARS = [True, 2, -3, 2.5, 1e300, 1 + 2j]


@pytest.mark.parametrize("shape", [(2,), ()])
def test_result_type_tensor_scalar(shape):
    for a, s in itertools.product(NAMES, SCALARS):
        e = ember.result_type(ember.ones(shape, dtype=E(a)), s)
        t = torch.result_type(torch.ones(shape, dtype=T(a)), s)
        assert _name(e) == _name(t), (a, s, shape)
        e = ember.result_type(s, ember.ones(shape, dtype=E(a)))
        t = torch.result_type(s, torch.ones(shape, dtype=T(a)))
        assert _name(e) == _name(t), (s, a, shape)


def test_result_type_scalars():
    for s1, s2 in itertools.product(SCALARS, SCALARS):
        assert _name(ember.result_type(s1, s2)) == _name(torch.result_type(s1, s2)), (s1, s2)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64",
                                  "complex128"])
def test_finfo(name):
    e, t = ember.finfo(E(name)), torch.finfo(T(name))
    for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(e, f) == getattr(t, f), f
    assert e.dtype == t.dtype


def test_finfo_default_and_errors():
    assert ember.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError):
        torch.finfo(torch.int32)
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    t = torch.iinfo(T(name))
    e = ember.iinfo(E(name))
    assert (e.bits, e.min, e.max, e.dtype) == (t.bits, t.min, t.max, t.dtype)


@pytest.mark.parametrize("name", ["float32", "bool", "complex64"])
def test_iinfo_rejects_non_integers(name):
    with pytest.raises(TypeError):
        torch.iinfo(T(name))
    with pytest.raises(TypeError):
        ember.iinfo(E(name))


def test_dtype_attributes():
    for n in NAMES:
        e, t = E(n), T(n)
        assert e.is_floating_point == t.is_floating_point, n
        assert e.is_complex == t.is_complex, n
        assert e.is_signed == t.is_signed, n
        assert e.itemsize == t.itemsize, n
        assert repr(e) == repr(t).replace("torch", "ember")
    assert ember.float is ember.float32 and ember.double is ember.float64
    assert ember.long is ember.int64 and ember.half is ember.float16
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128


@pytest.fixture
def default_float64():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    yield
    ember.set_default_dtype(ember.float32)
    torch.set_default_dtype(torch.float32)


def test_set_default_dtype_effects(default_float64):
    assert ember.get_default_dtype() is ember.float64
    cases = [
        lambda lib: lib.tensor([1.5, 2.0]),
        lambda lib: lib.tensor(1.5),
        lambda lib: lib.tensor([1 + 2j]),
        lambda lib: lib.zeros(2),
        lambda lib: lib.ones(2, 3),
        lambda lib: lib.empty(2),
        lambda lib: lib.full((2,), 1.5),
        lambda lib: lib.arange(0.0, 1.0, 0.25),
        lambda lib: lib.linspace(0, 1, 5),
        lambda lib: lib.tensor([1, 2]) / lib.tensor([2, 4]),
        lambda lib: lib.tensor([1, 2]) / 2,
        lambda lib: lib.tensor([1, 2]) * 1.5,
        lambda lib: lib.tensor([1, 2]).exp(),
        lambda lib: lib.tensor([1, 2], dtype=lib.float32) * lib.tensor(2.0),
        lambda lib: lib.tensor([1, 2]) + 1j,
    ]
    for i, c in enumerate(cases):
        e, t = c(ember), c(torch)
        assert _name(e.dtype) == _name(t.dtype), i
    assert ember.result_type(ember.tensor([1]), 2.5) is ember.float64


def test_int_division_default_float32():
    e = ember.tensor([1, 2]) / ember.tensor([2, 4])
    assert e.dtype is ember.float32
    assert e.tolist() == [0.5, 0.5]


def test_set_default_dtype_rejects_non_float():
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int64)
    assert ember.get_default_dtype() is ember.float32


# zuko builds its masks with torch.as_tensor(order, dtype=int); torch reads Python's number
# types as dtypes everywhere it takes one
PY_TYPE_DTYPE_CASES = [
    "lib.zeros(2, dtype=float)", "lib.zeros(2, dtype=int)", "lib.ones(2, dtype=bool)",
    "lib.zeros(2, dtype=complex)", "lib.as_tensor([1, 2], dtype=int)",
    "lib.tensor([1, 2], dtype=float)", "lib.arange(3, dtype=float)", "lib.ones(2).to(int)",
    "lib.ones(2).to(dtype=bool)", "lib.ones(2).to('cpu', float)", "lib.full((2,), 1, dtype=int)",
    "lib.ones(2).sum(dtype=float)", "lib.ones(2).new_zeros(2, dtype=int)",
    "lib.zeros_like(lib.ones(2), dtype=int)", "lib.ones(2, dtype=float).cumsum(0, dtype=int)",
    "lib.nn.functional.softmax(lib.ones(2), 0, dtype=float)", "lib.ones(2).view(int)",
    "lib.randint(0, 3, (2,), dtype=float)", "lib.nn.Linear(2, 2).to(float).weight",
]


@pytest.mark.parametrize("expr", PY_TYPE_DTYPE_CASES)
def test_python_number_types_stand_for_dtypes(expr):
    torch.set_default_dtype(torch.float32)
    want = eval(expr, {"lib": torch})
    got = eval(expr, {"lib": ember})
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert got.tolist() == want.tolist() or expr.startswith(("lib.randint", "lib.nn."))


def test_python_number_types_follow_no_default_dtype():
    # float means float64 even under another default dtype, as torch's
    for lib in (torch, ember):
        old = lib.get_default_dtype()
        try:
            lib.set_default_dtype(lib.float16)
            assert lib.zeros(1, dtype=float).dtype == lib.float64
            assert lib.ones(2).dtype == lib.float16
        finally:
            lib.set_default_dtype(old)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_other_types_as_dtype_raise_as_torch(lib):
    with pytest.raises(TypeError, match=r"ones\(\): argument 'dtype' must be (torch|ember)\.dtype"):
        lib.ones(2, dtype=str)
    with pytest.raises(TypeError, match=r"to\(\) received an invalid combination of arguments"):
        lib.ones(2).to(str)
    with pytest.raises(ValueError, match="invalid type: 'float'"):
        lib.ones(2).type(float)
