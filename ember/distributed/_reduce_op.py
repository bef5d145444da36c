"""`ReduceOp` and `Backend` (torch.distributed's enumerations)."""
import enum

__all__ = ["ReduceOp", "Backend"]


class _RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"


class ReduceOp:
    """An enum-like class of reduction operations: ``SUM``, ``PRODUCT``, ``MIN``, ``MAX``,
    ``BAND``, ``BOR``, ``BXOR`` and ``AVG``.

    ``BAND``, ``BOR`` and ``BXOR`` are for integer and bool tensors; ``AVG`` divides the sum by
    the group's size (floating and complex tensors); ``MIN``/``MAX`` are not defined for
    complex tensors.  On bool tensors ``SUM``/``MAX`` are a logical or and
    ``PRODUCT``/``MIN`` a logical and.
    """

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM

    def __init__(self, op):
        self.op = _RedOpType(op)
        self._factor = None

    def __eq__(self, other):
        return int(self) == int(other)

    def __hash__(self):
        return hash(self.op)

    def __int__(self):
        return int(self.op)

    def __repr__(self):
        return f"ReduceOp({self.op.name})"


def _make_nccl_premul_sum(factor):
    """``ReduceOp.PREMUL_SUM`` with ``factor``: each rank multiplies its input by ``factor``
    (a Python number or a one-element tensor, which may differ between ranks) before the
    sum.  For all_reduce, reduce and reduce_scatter on floating and complex tensors."""
    from .._core.tensor import Tensor
    if isinstance(factor, Tensor):
        if factor.numel() != 1:
            raise ValueError(f"_make_nccl_premul_sum: a tensor factor must hold one element, "
                             f"got shape {tuple(factor.shape)}")
    elif not isinstance(factor, (int, float, complex)) or isinstance(factor, bool):
        raise TypeError(f"_make_nccl_premul_sum: factor must be a number or a one-element "
                        f"tensor, got {type(factor).__name__}")
    op = ReduceOp(_RedOpType.PREMUL_SUM)
    op._factor = factor
    return op


def premul_factor(op, name):
    """The factor of a PREMUL_SUM ``op`` as a NumPy scalar (a bare enum has none)."""
    f = getattr(op, "_factor", None)
    if f is None:
        raise ValueError(f"{name}: ReduceOp.PREMUL_SUM needs a factor: pass "
                         f"dist._make_nccl_premul_sum(factor)")
    data = getattr(f, "_data", None)
    return data.reshape(-1)[0] if data is not None else f


def as_red_op(op):
    if isinstance(op, ReduceOp):
        return op.op
    try:
        return _RedOpType(op)
    except ValueError:
        raise ValueError(f"invalid reduce op {op!r}; use one of ReduceOp.SUM, AVG, PRODUCT, "
                         f"MIN, MAX, BAND, BOR, BXOR, or dist._make_nccl_premul_sum(factor)"
                         ) from None


class Backend(str):
    """Backend names: ``Backend.GLOO``, ``Backend.MPI``, ``Backend.NCCL`` (and ``UCC``).

    ``Backend("GLOO")`` returns the lower-case name.  In ember, "gloo" and "mpi" both select
    the CPU backend on MPI; "nccl" needs GPUs.
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    default_device_backend_map = {"cpu": GLOO}
    backend_list = [UNDEFINED, GLOO, NCCL, UCC, MPI]

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return str.__new__(cls, value)
