"""ember.utils: hooks.RemovableHandle, weak containers, backcompat switches,
swap_tensors and set_module, against torch."""
import gc
import pickle
import warnings
from collections import OrderedDict

import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_removable_handle(lib):
    hooks, extra = OrderedDict(), OrderedDict()
    h = lib.utils.hooks.RemovableHandle(hooks, extra_dict=extra)
    h2 = lib.utils.hooks.RemovableHandle(hooks)
    assert h2.id == h.id + 1
    hooks[h.id], extra[h.id], hooks[h2.id] = "a", True, "b"
    with h:
        pass
    assert list(hooks.values()) == ["b"] and not extra
    h.remove()  # removing twice is harmless
    state = pickle.loads(pickle.dumps((hooks, h2)))
    state[1].remove()
    assert not state[0] and list(hooks.values()) == ["b"]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_warn_if_has_hooks_and_unserializable(lib):
    t = lib.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lib.utils.hooks.warn_if_has_hooks(t)  # no hooks: silent
    t._backward_hooks = {0: lambda g: g}
    with pytest.warns(UserWarning, match="unserializable_hook"):
        lib.utils.hooks.warn_if_has_hooks(t)
    t._backward_hooks = {0: lib.utils.hooks.unserializable_hook(lambda g: g)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lib.utils.hooks.warn_if_has_hooks(t)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_weak_id_key_dictionary(lib):
    a, b = lib.ones(2), lib.ones(2)  # equal values, distinct keys
    d = lib.utils.weak.WeakTensorKeyDictionary()
    d[a], d[b] = 1, 2
    assert len(d) == 2 and d[a] == 1 and d[b] == 2 and a in d
    del d[a]
    assert a not in d and len(d) == 1
    ref = lib.utils.weak.WeakIdRef(b)
    assert ref() is b and hash(ref) == id(b) and ref == lib.utils.weak.WeakIdRef(b)
    tw = lib.utils.weak.TensorWeakRef(b)
    assert tw() is b
    del b
    gc.collect()
    assert len(d) == 0 and ref() is None and tw() is None
    with pytest.raises(KeyError):
        d[a]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_backcompat_switches(lib):
    w = lib.utils.backcompat.broadcast_warning
    assert w.enabled is False
    w.enabled = True
    assert w.get_enabled() is True and lib.utils.backcompat.keepdim_warning.enabled is False
    w.set_enabled(False)
    assert w.enabled is False


def test_swap_tensors_like_torch():
    results = []
    for lib in (torch, ember):
        a = lib.nn.Parameter(lib.ones(2))
        b = lib.zeros(3)
        a.grad = lib.full((2,), 5.0)
        b.tag = "b"
        lib.utils.swap_tensors(a, b)
        results.append((type(a).__name__, a.tolist(), a.requires_grad, a.grad, a.tag,
                        type(b).__name__, b.tolist(), b.requires_grad, b.grad.tolist(),
                        hasattr(b, "tag")))
    assert results[0] == results[1]
    with pytest.raises((TypeError, AttributeError)):
        torch.utils.swap_tensors(torch.ones(1), 1)
    with pytest.raises(TypeError):
        ember.utils.swap_tensors(ember.ones(1), 1)


def test_set_module():
    def f():
        pass
    for lib in (torch, ember):
        lib.utils.set_module(f, "ember.somewhere")
        assert f.__module__ == "ember.somewhere"
        with pytest.raises(TypeError, match="string"):
            lib.utils.set_module(f, 3)
