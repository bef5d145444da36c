"""ember.fft: every transform over real, complex, integer and half inputs (torch rejects
halves: ember must too), with n/s smaller and larger than the input, odd and even
lengths, s entries of -1, each norm mode, non-contiguous and batched inputs."""
from .core import COMPLEX, FLOATS, OpInfo, SampleInput, make

DTYPES = FLOATS + COMPLEX + ("int64", "float16", "bfloat16")
NORMS = (None, "backward", "ortho", "forward")


def _samples_1d(dtype, rng):
    yield SampleInput((make((8,), dtype, rng),), name="1d-even")
    yield SampleInput((make((3, 7), dtype, rng),), {"norm": "ortho"}, name="odd-ortho")
    yield SampleInput((make((2, 3, 6), dtype, rng, noncontig=True),), {"dim": 1},
                      name="noncontig-dim1")
    for i, n in enumerate((4, 5, 11, 12)):
        yield SampleInput((make((3, 6), dtype, rng),), {"n": n, "norm": NORMS[i]},
                          name=f"n{n}-{NORMS[i]}")
    yield SampleInput((make((4, 5), dtype, rng),), {"n": 6, "dim": 0, "norm": "forward"},
                      name="dim0-forward")


def _samples_nd(two):
    def gen(dtype, rng):
        yield SampleInput((make((4, 6), dtype, rng),), name="2d")
        yield SampleInput((make((2, 5, 3), dtype, rng, noncontig=True),), {"norm": "ortho"},
                          name="3d-noncontig-ortho")
        yield SampleInput((make((2, 4, 6), dtype, rng),), {"s": (3, 8), "norm": "forward"},
                          name="s-mixed")
        yield SampleInput((make((2, 4, 5), dtype, rng),), {"s": (-1, 7)}, name="s-minus1")
        yield SampleInput((make((3, 4, 5), dtype, rng),), {"dim": (0, 2), "norm": "backward"},
                          name="dims-0-2")
        if not two:
            yield SampleInput((make((3, 4, 5), dtype, rng),), {"s": (6,)}, name="s-only")
            yield SampleInput((make((2, 3, 4), dtype, rng),), {"dim": (-1, 0, 1)},
                              name="all-dims-permuted")
    return gen


def _errors(name, nd):
    def gen(rng):
        x = make((4, 6), "float32", rng)
        if nd:
            yield SampleInput((x,), {"dim": (0, 0)}), RuntimeError
            yield SampleInput((x,), {"s": (3,), "dim": (0, 1)}), RuntimeError
            yield SampleInput((x,), {"s": (0, 3)}), RuntimeError
        else:
            yield SampleInput((x,), {"n": 0}), RuntimeError
            yield SampleInput((x,), {"dim": 2}), IndexError
            yield SampleInput((make((), "float32", rng),),), IndexError
        yield SampleInput((x,), {"norm": "bad"}), RuntimeError
    return gen


def _fn(name):
    # x * 1: torch's hfft backward returns a conjugate view, which test_opdb's grad
    # comparison cannot turn into NumPy; the multiplication materialises it
    def fn(lib, x, **kw):
        return getattr(lib.fft, name)(x * 1 if name.startswith("hfft") else x, **kw)
    return fn


OPS = []
for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    OPS.append(OpInfo(f"fft.{_name}", fn=_fn(_name), samples=_samples_1d, dtypes=DTYPES,
                      atol=2e-5, rtol=2e-5,
                      grad_atol=1e-10, errors=_errors(_name, False)))
for _name in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"):
    OPS.append(OpInfo(f"fft.{_name}", fn=_fn(_name), samples=_samples_nd(True),
                      dtypes=DTYPES, atol=3e-5,
                      rtol=3e-5, grad_atol=1e-10, errors=_errors(_name, True)))
for _name in ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"):
    OPS.append(OpInfo(f"fft.{_name}", fn=_fn(_name), samples=_samples_nd(False),
                      dtypes=DTYPES, atol=3e-5,
                      rtol=3e-5, grad_atol=1e-10, errors=_errors(_name, True)))


def _shift_samples(dtype, rng):
    yield SampleInput((make((5,), dtype, rng),), name="1d-odd")
    yield SampleInput((make((4, 6), dtype, rng),), name="2d")
    yield SampleInput((make((3, 4, 5), dtype, rng),), {"dim": 1}, name="dim1")
    yield SampleInput((make((3, 4, 5), dtype, rng),), {"dim": (0, -1)}, name="dims")


for _name in ("fftshift", "ifftshift"):
    OPS.append(OpInfo(f"fft.{_name}", samples=_shift_samples,
                      dtypes=FLOATS + COMPLEX + ("int64", "bool")))


def _freq_samples(dtype, rng):
    yield SampleInput((8,), name="even")
    yield SampleInput((7, 0.5), name="odd-d")
    yield SampleInput((1,), name="one")
    yield SampleInput((6,), {"dtype": "float64"}, name="dtype")


def _freq(name):
    def fn(lib, *args, **kw):
        if "dtype" in kw:
            kw = dict(kw, dtype=getattr(lib, kw["dtype"]))
        return getattr(lib.fft, name)(*args, **kw)
    return fn


for _name in ("fftfreq", "rfftfreq"):
    OPS.append(OpInfo(f"fft.{_name}", fn=_freq(_name), samples=_freq_samples, dtypes=("float32",),
                      grad=False))


def _out_samples(dtype, rng):
    yield SampleInput((make((3, 8), dtype, rng),), name="out")


def _fft_out(lib, x):
    out = lib.empty(0, dtype=lib.complex128)
    r = lib.fft.fft(x, out=out)
    assert r is out
    return out


def _irfft_out(lib, x):
    out = lib.empty(0, dtype=lib.float64)
    lib.fft.irfft(x, 6, out=out)
    return out


OPS += [OpInfo("fft.fft-out", fn=_fft_out, samples=_out_samples, dtypes=FLOATS + COMPLEX,
               grad=False),
        OpInfo("fft.irfft-out", fn=_irfft_out, samples=_out_samples, dtypes=COMPLEX, grad=False)]
