"""torch.utils.dlpack under ember: memory shared both ways with torch and NumPy, legacy
capsules, the device-type enum; torch's own from_dlpack reads ember tensors."""
import numpy as np
import pytest
import torch

import ember
from ember.utils import dlpack


def test_shares_memory_with_torch_both_ways():
    t = torch.arange(6.).reshape(2, 3)
    e = dlpack.from_dlpack(t)
    assert isinstance(e, ember.Tensor) and e.shape == (2, 3) and e.dtype == ember.float32
    e.add_(1)
    assert t.tolist() == [[1., 2., 3.], [4., 5., 6.]]
    back = torch.from_dlpack(e)
    back.zero_()
    assert e.tolist() == [[0.] * 3] * 2
    assert ember.from_dlpack(t[:, ::2]).tolist() == [[0., 0.], [0., 0.]]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool, torch.float16,
                                   torch.complex64, torch.uint8])
def test_dtypes_and_strides(dtype):
    t = (torch.arange(12) % 3).to(dtype).reshape(3, 4)[:, 1::2]
    e = dlpack.from_dlpack(t)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_capsules():
    t = torch.arange(4.)
    e = dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    assert e.tolist() == [0., 1., 2., 3.]
    e.mul_(2)  # writable (a copy: NumPy imports legacy capsules read-only)
    src = ember.arange(3.)
    t2 = torch.utils.dlpack.from_dlpack(dlpack.to_dlpack(src))
    t2.add_(5)
    assert src.tolist() == [5., 6., 7.]


def test_numpy_and_enum_and_errors():
    a = np.ones(3, np.int32)
    e = dlpack.from_dlpack(a)
    e.add_(1)
    assert a.tolist() == [2, 2, 2]
    assert {k: int(v) for k, v in dlpack.DLDeviceType.__members__.items()} == \
        {k: int(v) for k, v in torch.utils.dlpack.DLDeviceType.__members__.items()}
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient"):
        dlpack.to_dlpack(ember.ones(2, requires_grad=True))
