"""torch.utils.backend_registration: a third-party device registered with ember's backend
registry gets torch's generated methods (tensor.foo(), is_foo, module.foo(), packed
sequences, storages) after rename_privateuse1_backend."""
import numpy as np
import pytest

import ember
from ember._core.device import register_backend
from ember.utils import backend_registration as br


class _FooArray(np.ndarray):
    pass


@pytest.fixture(autouse=True)
def _unregister_emberfoo():
    """The registration is process-wide: undo it after each test, so that tests run after
    these (tests/accelerator: no accelerator on a CPU-only machine) see no "emberfoo"."""
    yield
    from ember._core import device as dev
    from ember._core.storage import TypedStorage, UntypedStorage
    from ember.nn.utils.rnn import PackedSequence
    dev._BACKENDS.pop("emberfoo", None)
    dev._BY_TYPE.clear()
    dev.XP_BY_ARRAY_TYPE.pop(_FooArray, None)
    br._NAME[0] = "privateuse1"
    for cls in (ember.Tensor, ember.nn.Module, PackedSequence, UntypedStorage, TypedStorage):
        for attr in ("emberfoo", "is_emberfoo"):
            if attr in vars(cls):
                delattr(cls, attr)


def test_rename_and_generated_methods():
    register_backend("emberfoo", np, _FooArray, to_host=np.asarray,
                     from_host=lambda a: np.asarray(a).view(_FooArray))
    ember.utils.rename_privateuse1_backend("emberfoo")
    ember.utils.rename_privateuse1_backend("emberfoo")  # the same name again is fine
    with pytest.raises(RuntimeError, match="has already been set"):
        ember.utils.rename_privateuse1_backend("other")
    ember.utils.generate_methods_for_privateuse1_backend(for_storage=True,
                                                         unsupported_dtype=[ember.float16])
    t = ember.arange(3.)
    assert not t.is_emberfoo
    f = t.emberfoo()
    assert f.is_emberfoo and f.device == ember.device("emberfoo", 0)
    assert type(f._data) is _FooArray and f.cpu().tolist() == [0., 1., 2.]
    assert t.emberfoo("emberfoo:0").is_emberfoo and t.emberfoo(0).is_emberfoo
    with pytest.raises(RuntimeError, match="Invalid device, must be emberfoo device"):
        t.emberfoo("cpu")
    m = ember.nn.Linear(2, 2).emberfoo()
    assert m.weight.is_emberfoo and m.weight.device.type == "emberfoo"
    seq = ember.nn.utils.rnn.pack_sequence([ember.ones(2, 1), ember.ones(1, 1)])
    assert not seq.is_emberfoo and seq.emberfoo().is_emberfoo
    s = ember.arange(2.).untyped_storage()
    assert not s.is_emberfoo
    with pytest.raises(RuntimeError, match="has already been registered"):
        br.generate_methods_for_privateuse1_backend()
