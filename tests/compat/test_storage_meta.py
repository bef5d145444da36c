"""Storages of meta tensors against torch: a data-less UntypedStorage/TypedStorage on the
meta device (its size in bytes spanning the root tensor's layout, data_ptr 0), value reads
and moves off the device raising torch's errors, writes and fills accepted and dropped; one
storage object per tensor data, so a resize_ of it is seen by the tensor's later storages
and a tensor's resize_ grows it."""
import io
import pickle
import warnings

import pytest
import torch

import ember


def _describe(L, r):
    if isinstance(r, (L.UntypedStorage, L.TypedStorage)):
        return ("typed" if isinstance(r, L.TypedStorage) else "untyped", str(r.device),
                r.nbytes(), r.size(), r.data_ptr(), r.element_size())
    if isinstance(r, (L.device, L.dtype)):
        return str(r).split(".")[-1]
    if isinstance(r, str):  # reprs: the namespace prefix is the library's own
        return r.replace("ember.", "torch.")
    return r


def _typed(L, t):
    """``t.storage()``; torch's built without its once-per-process deprecation warning (a
    test elsewhere checks that warning), ember's through ``storage()`` itself."""
    if L is torch:
        return torch.TypedStorage(wrap_storage=t.untyped_storage(), dtype=t.dtype,
                                  _internal=True)
    return t.storage()


def _probe(L):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage's deprecation
        x = L.empty(3, 4, device="meta")
        out = []
        for tag, get in (("untyped", x.untyped_storage), ("typed", lambda: _typed(L, x))):
            for name, f in [
                    ("self", lambda s: s), ("len", len), ("fill_", lambda s: s.fill_(1)),
                    ("clone", lambda s: s.clone()), ("resizable", lambda s: s.resizable()),
                    ("is_shared", lambda s: s.is_shared()), ("share", lambda s: s.share_memory_()),
                    ("type", lambda s: s.type()), ("get_device", lambda s: s.get_device()),
                    ("setitem", lambda s: s.__setitem__(0, 1)), ("float", lambda s: s.float()),
                    ("tolist", lambda s: s.tolist()), ("getitem", lambda s: s[0]),
                    ("pickle", pickle.dumps), ("to_cpu", lambda s: s.to(device="cpu")),
                    ("cpu", lambda s: s.cpu()), ("to_meta", lambda s: s.to(device="meta")),
                    ("is_pinned", lambda s: s.is_pinned()), ("repr", repr),
                    ("save", lambda s: L.save(s, io.BytesIO()))]:
                try:
                    out.append((tag, name, _describe(L, f(get()))))
                except (RuntimeError, NotImplementedError) as e:
                    out.append((tag, name, type(e).__name__, str(e)))
        v = x.t()[1:]
        out.append(("view", v.untyped_storage().nbytes(), _typed(L, v).size(), v.data_ptr(),
                    v.untyped_storage().data_ptr()))
        for name, t in [("strided", L.empty_strided((2, 3), (1, 4), device="meta")),
                        ("expanded", L.empty(3, 1, device="meta").expand(3, 5)),
                        ("op", L.empty(3, 1, device="meta") + L.empty(1, 5, device="meta")),
                        ("empty", L.empty(0, 3, device="meta")),
                        ("double", L.empty(2, 3, device="meta", dtype=L.float64)[:, 1])]:
            out.append((name, _describe(L, t.untyped_storage()), repr(t.untyped_storage())
                        .replace("ember.", "torch.")))
        out.append(("ctor", _describe(L, L.UntypedStorage(10, device="meta"))))
        out.append(("ctor_typed", _describe(L, L.TypedStorage(10, device="meta", dtype=L.float64,
                                                               _internal=True))))
        out.append(("isinstance", isinstance(x.untyped_storage(), L.UntypedStorage)))
    return out


def _probe_torch():
    """`_probe` of torch, leaving its once-per-process TypedStorage deprecation warning as it
    was (its TypedStorage methods warn; a test elsewhere checks that warning)."""
    flag = torch.storage._warn_typed_storage_removal.__dict__
    had = flag.get("has_warned", None)
    try:
        return _probe(torch)
    finally:
        if had is None:
            flag.pop("has_warned", None)
        else:
            flag["has_warned"] = had


def test_meta_storage_like_torch():
    got, want = _probe(ember), _probe_torch()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w


def test_resize_of_a_meta_storage():
    s = ember.UntypedStorage(10, device="meta")
    assert s.resize_(20) is s and s.nbytes() == 20 and s.resizable()


def _resizes(L):
    out = []
    t = L.empty(4, device="meta")
    s = t.untyped_storage()
    s.resize_(100)
    v = t[1:3]
    out += [t.untyped_storage().nbytes(), v.untyped_storage().nbytes(),
            t.untyped_storage() is s, v.untyped_storage() is s]
    t.add_(1)
    out += [t.untyped_storage().nbytes(), t.detach().untyped_storage().nbytes(),
            t.view(2, 2).untyped_storage().nbytes()]
    t.resize_(30)   # the tensor's resize grows the same storage
    out += [s.nbytes(), t.untyped_storage() is s, tuple(t.shape), t.stride()]
    t = L.empty(10, device="meta")[2:]
    s = t.untyped_storage()
    for n in (3, 20):   # a view keeps its storage offset
        t.resize_(n)
        out += [t.storage_offset(), t.stride(), s.nbytes(), t.untyped_storage() is s]
    for shape in ((4, 3), (2, 3)):   # the same shape keeps its strides, another is contiguous
        u = L.empty(3, 4, device="meta").t()
        u.resize_(*shape)
        out += [u.stride(), u.untyped_storage().nbytes()]
    y = L.empty(5, device="meta", dtype=L.float64)[2:]
    y.untyped_storage().resize_(0)
    out += [y.untyped_storage().nbytes(), L.empty(2, 3, device="meta").t().untyped_storage()
            .nbytes(), L.empty_strided((2, 2), (1, 4), device="meta").untyped_storage().nbytes()]
    return out


def test_one_storage_per_meta_tensor_like_torch():
    assert _resizes(ember) == _resizes(torch)
