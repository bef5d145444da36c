"""Names libraries written for torch reach (kornia 0.9, torch_geometric 2.8), against torch:
complex32's dtype, torch._assert_async, pinning on a machine without an accelerator, the aten
overloads torch_geometric registers handlers on, torch.jit._overload."""
import pickle

import pytest
import torch

import ember


def test_complex32_dtype_as_torch():
    for lib in (torch, ember):
        c = lib.complex32
        assert lib.chalf is c and c.is_complex and not c.is_floating_point and c.is_signed
        assert c.itemsize == 4 and str(c).endswith(".complex32") and c.to_real() is lib.float16
        assert pickle.loads(pickle.dumps(c)) is c
        assert c not in (lib.complex64, lib.complex128, lib.float16)
    for name in ("bool", "int64", "uint8", "float16", "bfloat16", "float32", "float64",
                 "complex64", "complex128", "complex32"):
        for pair in ((name, "complex32"), ("complex32", name)):
            want = torch.promote_types(*(getattr(torch, n) for n in pair))
            got = ember.promote_types(*(getattr(ember, n) for n in pair))
            assert got.name == str(want).split(".")[1], (pair, got, want)
    fe, ft = ember.finfo(ember.complex32), torch.finfo(torch.complex32)
    assert (fe.eps, fe.max, fe.tiny, fe.resolution, fe.bits, fe.dtype) == \
        (ft.eps, ft.max, ft.tiny, ft.resolution, ft.bits, ft.dtype)


def test_complex32_tensors_are_refused_clearly():
    # no NumPy storage for two float16s: a factory or cast raises instead of making complex64
    for f in (lambda: ember.zeros(2, dtype=ember.complex32),
              lambda: ember.ones(2).to(ember.chalf)):
        with pytest.raises(NotImplementedError, match="complex32"):
            f()


@pytest.mark.parametrize("args", [(True,), (False,), (0.0,), ([1, 1],), (False, "msg here"),
                                  ([],), (2 + 0j,)])
def test_assert_async_as_torch(args):
    def run(lib):
        try:
            return lib._assert_async(lib.tensor(args[0]), *args[1:])
        except RuntimeError as e:
            return str(e)
    assert run(ember) == run(torch)


def test_pinning_without_accelerator_as_torch():
    def run(lib, f):
        try:
            return f(lib)
        except RuntimeError as e:
            return str(e)
    cases = [lambda L: L.ones(3).pin_memory(), lambda L: L.ones(3).is_pinned(),
             lambda L: L.ops.aten._pin_memory.default(L.ones(3)),
             lambda L: L.ops.aten.pin_memory.default(L.ones(3)),
             lambda L: L.ops.aten.is_pinned.default(L.ones(3)),
             lambda L: str(L.ops.aten._pin_memory.default._schema)]
    for f in cases:
        assert run(ember, f) == run(torch, f)
    # save_on_cpu(pin_memory=True) pins only with an accelerator, as torch's
    x = ember.ones(3, requires_grad=True)
    with ember.autograd.graph.save_on_cpu(pin_memory=True):
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_aten_overloads_torch_geometric_uses():
    x = [[3.0, 1, 2], [0, 5, 4]]
    for op, args, kw in (("sort.stable", (), {"stable": True, "dim": 1}),
                         ("sort.default", (0, True), {}),
                         ("index.Tensor", ([None, [0, 2]],), {}),
                         ("unbind.int", (1,), {})):
        name, ov = op.split(".")
        res = []
        for lib in (torch, ember):
            a = tuple([None if i is None else lib.tensor(i) for i in v] if isinstance(v, list)
                      else v for v in args)
            r = getattr(getattr(lib.ops.aten, name), ov)(lib.tensor(x), *a, **kw)
            res.append([t.tolist() for t in r] if isinstance(r, (tuple, list)) else r.tolist())
        assert res[0] == res[1], op
    m1 = [[1.0, 0], [0, 2]]
    got = ember.ops.aten._sparse_addmm.default(ember.ones(2, 2), ember.tensor(m1).to_sparse(),
                                               ember.ones(2, 2), beta=2, alpha=3)
    want = torch.ops.aten._sparse_addmm.default(torch.ones(2, 2), torch.tensor(m1).to_sparse(),
                                                torch.ones(2, 2), beta=2, alpha=3)
    assert got.tolist() == want.tolist()


def test_jit_overload_declarations():
    for lib in (torch, ember):
        @lib.jit._overload
        def f(x: int) -> int:
            pass

        def f(x):  # noqa: F811  the implementation follows its declarations
            return x + 1
        assert f(1) == 2

        class M:
            @lib.jit._overload_method
            def g(self, x: int) -> int:
                pass

            def g(self, x):  # noqa: F811
                return x * 2
        assert M().g(3) == 6


def test_cuda_stream_event_without_cuda_as_torch():
    def run(f):
        try:
            return f()
        except (RuntimeError, AssertionError) as e:
            return type(e).__name__, str(e)
    for f in (lambda L: L.cuda.Stream(), lambda L: L.cuda.Event(),
              lambda L: L.cuda.current_stream(), lambda L: L.cuda.stream(None).__enter__()):
        assert run(lambda: f(ember)) == run(lambda: f(torch))
    assert isinstance(ember.cuda.Stream, type) and isinstance(ember.cuda.Event, type)


def test_tensor_str_as_torch():
    from torch._tensor_str import PRINT_OPTS as tp, _tensor_str as ts

    from ember._tensor_str import PRINT_OPTS as ep, _tensor_str as es
    for k in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode"):
        assert getattr(ep, k) == getattr(tp, k)
    for x in ([[1.5, 2], [3, 4]], [1, 2, 3], list(range(2000)), [[1.25e-5, 3.0]],
              [[1 + 2j, 3.5]]):
        for indent in (0, 4):
            assert es(ember.tensor(x), indent=indent) == ts(torch.tensor(x), indent=indent)
    ember.set_printoptions(threshold=5)
    try:
        assert ep.threshold == 5
    finally:
        ember.set_printoptions(profile="default")


def test_dataloader_iterator_classes():
    from ember.utils.data import dataloader as dl
    loader = ember.utils.data.DataLoader(ember.arange(6.), batch_size=2)
    it = iter(loader)
    assert isinstance(it, dl._BaseDataLoaderIter) and isinstance(it, dl._SingleProcessDataLoaderIter)
    assert issubclass(dl._MultiProcessingDataLoaderIter, dl._BaseDataLoaderIter)
    assert next(it).tolist() == [0.0, 1.0]


def test_storage_identity_and_resize_as_torch():
    def probe(lib):
        x = lib.arange(12.)
        v = x[3:].view(3, 3)
        s = x.untyped_storage()
        r = [s is v.untyped_storage(), s == x.detach().untyped_storage(),
             s.data_ptr() == v.untyped_storage().data_ptr(), v.untyped_storage().nbytes(),
             v.storage_offset(), v._is_view(), x._is_view(), x.detach()._is_view()]
        t = lib.arange(6.)
        w = t[1:3]
        t.resize_(2, 2)  # fits the storage: kept, with its views
        r += [t.tolist(), t.untyped_storage().nbytes(), w.tolist()]
        w[0] = 7.0
        t.resize_(0)
        r += [t.untyped_storage().nbytes()]
        t.resize_(6)
        r += [t.tolist()]
        t.resize_(8)  # grows: new memory, the elements kept
        r += [t[:6].tolist(), t.untyped_storage().nbytes()]
        return r
    assert probe(ember) == probe(torch)


@pytest.mark.parametrize("make", [
    lambda L: L.ones(4)[1:], lambda L: L.ones(4).expand(2, 4), lambda L: L.ones(4).view(2, 2),
    lambda L: (L.ones(4, requires_grad=True) * 1)[1:], lambda L: L.ones(4).detach()[1:],
    lambda L: L.ones(4), lambda L: L.ones(4).data, lambda L: L.ones(4)[1:].detach()])
def test_detach_in_place_refuses_views_as_torch(make):
    def run(lib):
        try:
            return tuple(make(lib).detach_().shape)
        except RuntimeError as e:
            return str(e)
    assert run(ember) == run(torch)


def test_storage_cdata_names_the_memory():
    for lib in (torch, ember):
        x = lib.arange(6.0)
        c = x.untyped_storage()._cdata
        assert isinstance(c, int)
        assert c == x[2:].untyped_storage()._cdata == x.view(2, 3).t().untyped_storage()._cdata
        assert c != lib.arange(6.0).untyped_storage()._cdata
    m = ember.empty(3, device="meta")
    assert m.untyped_storage()._cdata == m[1:].untyped_storage()._cdata


@pytest.mark.parametrize("make", [
    lambda L, p: L.zeros(2, pin_memory=p), lambda L, p: L.ones(2, 3, pin_memory=p),
    lambda L, p: L.empty(2, pin_memory=p).shape, lambda L, p: L.full((2,), 1.5, pin_memory=p),
    lambda L, p: L.tensor([1.0, 2.0], pin_memory=p)])
def test_factories_pin_memory_without_accelerator_as_torch(make):
    def run(lib, pin):
        try:
            r = make(lib, pin)
            return tuple(r) if isinstance(r, tuple) or not hasattr(r, "tolist") else r.tolist()
        except RuntimeError as e:
            return str(e)
    for pin in (True, False):
        assert run(ember, pin) == run(torch, pin)


def test_ndarray_subclasses_become_plain_tensors_as_torch(tmp_path):
    # torch_geometric's Laplacian PE does torch.from_numpy(np.real(eigvecs of L.todense()))
    import warnings

    import numpy as np
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # NumPy's about np.matrix
        m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    for make in (lambda L: L.from_numpy(m[:, 1:]), lambda L: L.as_tensor(m),
                 lambda L: L.asarray(m), lambda L: L.tensor(m)):
        got, want = make(ember), make(torch)
        assert type(got.numpy()) is np.ndarray and got.tolist() == want.tolist()
        assert (got * 2).tolist() == (want * 2).tolist()
    mm = np.memmap(tmp_path / "m.bin", dtype=np.float32, mode="w+", shape=(4,))
    t = ember.from_numpy(mm)
    t += 1  # writes reach the file, as torch's
    mm.flush()
    assert np.fromfile(tmp_path / "m.bin", np.float32).tolist() == [1.0] * 4
    assert type(t.numpy()) is np.ndarray and (t * 2).tolist() == [2.0] * 4
