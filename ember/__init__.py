"""ember: a deep-learning framework on NumPy with PyTorch's API and semantics.

``import ember as torch`` runs ordinary PyTorch code.  Layers (bottom up):
``_core`` (dtypes, devices, Tensor, dispatch, autograd records), ``ops`` (every
operator, defined once), ``autograd`` (engine and user API), then the libraries.
"""
import builtins as _builtins

import numpy as _np

# Floating-point exceptions follow torch (inf/nan results, no warnings): NumPy's
# warnings would otherwise fire on log(0), 0/0, overflow in exp, ...
_np.seterr(all="ignore")

# Freed buffers stay in the heap: eager steps otherwise spend a third of their time in page
# faults of fresh memory (see _core/malloc_tuning.py; EMBER_MALLOC_TUNING=0 turns it off).
from ._core import malloc_tuning as _malloc_tuning  # noqa: E402
_malloc_tuning.apply()

from ._core.dtype import (  # noqa: E402
    bfloat16, bool, can_cast, cdouble, cfloat, chalf, complex32, complex64, complex128, double, dtype,
    finfo, float, float8_e4m3fn, float8_e5m2, float16, float32, float64, get_default_dtype,
    half, iinfo, int, int8, int16, int32, int64, is_complex, is_floating_point, long,
    promote_types, result_type, set_default_dtype, short, uint8, uint16, uint32, uint64)
from ._core.device import device  # noqa: E402
from ._core.tensor import Size, Tensor  # noqa: E402
from ._core.printing import set_printoptions  # noqa: E402
from ._core.dispatch import DispatchMode  # noqa: E402
from . import ops  # noqa: E402
from .ops import *  # noqa: E402,F401,F403
from .ops.legacy_tensors import *  # noqa: E402,F401,F403  (FloatTensor, LongTensor, ...)
from .ops.surface_extras import *  # noqa: E402,F401,F403  (abs_, *_copy, pi, ...)
from .ops.scatter_variants import *  # noqa: E402,F401,F403  (select_scatter, ...)
from .ops.tensor_extras import *  # noqa: E402,F401,F403  (nonzero_static, Tensor.apply_, ...)
from .ops.foreach import *  # noqa: E402,F401,F403  (_foreach_add, _foreach_lerp_, ...)
from ._core.storage import TypedStorage, UntypedStorage  # noqa: E402
from ._core.storage import LEGACY_STORAGES as _LEGACY_STORAGES  # noqa: E402
globals().update(_LEGACY_STORAGES)  # FloatStorage, LongStorage, ...
from . import storage  # noqa: E402,F401
from . import autograd  # noqa: E402
from .ops import _return_types as return_types  # noqa: E402
from . import nn  # noqa: E402
from . import optim  # noqa: E402
from .serialization import load, save  # noqa: E402
from . import serialization  # noqa: E402
from . import utils  # noqa: E402
from . import fx  # noqa: E402
from . import func  # noqa: E402
from .func import vmap  # noqa: E402,F401  (torch.vmap)
from . import linalg  # noqa: E402
from .linalg.legacy import (cholesky, cholesky_inverse, cholesky_solve, det, inverse, vander,  # noqa: E402,E501
                            logdet, lu_unpack, matrix_exp, matrix_power, pinverse, qr, slogdet,
                            svd, triangular_solve)
from . import fft, special  # noqa: E402
from . import sparse  # noqa: E402
from .sparse import sparse_coo_tensor  # noqa: E402
from .sparse import smm, spmm  # noqa: E402
from ._core.layout import *  # noqa: E402,F401,F403  (strided, sparse_coo, channels_last, ...)
from . import testing  # noqa: E402
from .autograd import (enable_grad, inference_mode, is_grad_enabled,  # noqa: E402
                       is_inference_mode_enabled, no_grad, set_grad_enabled)

from ._core.threads import get_num_threads, set_num_threads  # noqa: E402
from .ops.nn.conv_ops import convolution  # noqa: E402  (torch.convolution, ATen's)

# functions torch also exposes at top level (torch.relu, torch.conv2d, ...)
_TOP_LEVEL_NN = (
    "relu", "relu_", "selu", "selu_", "celu", "celu_", "prelu", "rrelu", "rrelu_",
    "hardshrink", "threshold", "threshold_", "dropout", "dropout_", "alpha_dropout",
    "feature_dropout", "embedding", "embedding_bag", "cosine_similarity", "pairwise_distance",
    "pdist", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "batch_norm",
    "layer_norm", "group_norm", "instance_norm", "rms_norm", "avg_pool1d", "max_pool1d",
    "max_pool2d", "max_pool3d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "bilinear",
    "ctc_loss", "cosine_embedding_loss", "hinge_embedding_loss", "kl_div",
    "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss",
    "binary_cross_entropy_with_logits", "logsigmoid", "hardtanh")
for _name in _TOP_LEVEL_NN:
    if hasattr(nn.functional, _name) and _name not in globals():
        globals()[_name] = getattr(nn.functional, _name)
del _name

from . import version  # noqa: E402
from .torch_version import TorchVersion as _TorchVersion  # noqa: E402
# torch-compatible, with the local tag "+ember"; compares as a version (">= (2, 1)", "> 2.9")
__version__ = _TorchVersion(version.__version__)


def is_storage(obj):
    """True if ``obj`` is a storage (``TypedStorage`` or ``UntypedStorage``)."""
    return isinstance(obj, (TypedStorage, UntypedStorage))


def is_tensor(obj):
    """True if ``obj`` is an ember Tensor."""
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


def typename(obj):
    return type(obj).__name__ if not isinstance(obj, Tensor) else obj.type()


from . import amp  # noqa: E402
from .amp import autocast, is_autocast_available, is_autocast_enabled, get_autocast_dtype  # noqa: E402,E501
from .amp import GradScaler, set_autocast_dtype, set_autocast_enabled  # noqa: E402,F401
from .amp.legacy import *  # noqa: E402,F401,F403  (get_autocast_cpu_dtype, ...)


# ---- __ember_function__ routing (keep this block last: it wraps what is defined above) --
def _route_overrides():
    from ._core.dispatch import overridable, route_tensor_methods
    g = globals()
    # functions defined here (and dtype helpers taking tensors) honour overrides like the
    # ops modules' public functions; is_tensor/typename answer about the object itself
    for name, v in list(g.items()):
        if name[0] != "_" and name not in ("is_tensor", "is_storage", "typename") and \
                getattr(v, "__module__", None) == __name__ and callable(v) and \
                not isinstance(v, type) and not hasattr(v, "__wrapped_impl__"):
            g[name] = overridable(v)
    for name in ("is_floating_point", "is_complex", "result_type"):
        g[name] = overridable(g[name])
    route_tensor_methods(Tensor)


_route_overrides()


from . import backends, cpu, cuda  # noqa: E402
from . import futures  # noqa: E402,F401  (torch.futures)
from .futures import Future  # noqa: E402,F401  (torch.Future: captum tests isinstance with it)
from . import quasirandom  # noqa: E402,F401  (torch.quasirandom.SobolEngine)
from . import functional  # noqa: E402,F401  (torch.functional: opt_einsum_fx reads its einsum)
from . import profiler  # noqa: E402
from . import hub  # noqa: E402
from . import accelerator  # noqa: E402
from . import distributions  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_enabled  # noqa: E402

from ._core.deterministic import DETERMINISTIC as _DETERMINISTIC  # noqa: E402
_MATMUL_PRECISION = ["highest"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Sets whether operations must use deterministic algorithms; ember's always are."""
    _DETERMINISTIC.update(mode=_builtins.bool(mode), warn_only=_builtins.bool(warn_only))


def are_deterministic_algorithms_enabled():
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _DETERMINISTIC["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0/"default": off, 1/"warn": warn on nondeterministic ops, 2/"error": raise."""
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    elif not isinstance(debug_mode, _builtins.int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _DETERMINISTIC["mode"]:
        return 0
    return 1 if _DETERMINISTIC["warn_only"] else 2


def set_float32_matmul_precision(precision):
    """Accepts 'highest', 'high' or 'medium'; ember's float32 matmul is always full precision."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}; expected 'highest', 'high' or "
                           f"'medium'")
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision():
    return _MATMUL_PRECISION[0]


from ._core.device import get_default_device, set_default_device  # noqa: E402,F401
from ._toplevel_extras import *  # noqa: E402,F401,F403  (set_warn_always, unsafe_split, ...)
from ._aten_nn import *  # noqa: E402,F401,F403  (torch.lstm, native_batch_norm, grid_sampler, ...)
from ._core.overrides import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402,E501,F401
from . import overrides  # noqa: E402,F401  (torch.overrides)
from .ops.gradient import gradient  # noqa: E402,F401  (torch.gradient)
from .utils.dlpack import from_dlpack  # noqa: E402,F401  (torch.from_dlpack)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, set_anomaly_enabled  # noqa: E402,E501,F401
from ._default_tensor_type import set_default_tensor_type  # noqa: E402,F401
from .linalg.lapack_legacy import geqrf, lu, lu_solve, orgqr, ormqr  # noqa: E402,F401
from .ops.layout_inplace import as_strided_, empty_permuted, resize_as_  # noqa: E402,F401
from .ops.distributions import binomial  # noqa: E402,F401  (torch.binomial)
from .ops.histogramdd import histogramdd  # noqa: E402,F401
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: E402,F401
from .random import thread_safe_generator  # noqa: E402,F401

# Every op is registered by now (sub-packages declare some on import): give each its
# decomposition and its lowering path (ember.ops.decompositions, ember.ops.lowering).
from .ops import decompositions as _decompositions, lowering as _lowering  # noqa: E402
_decompositions.install()
_lowering.install()

# ember.compile: capture (ember._dynamo) and its public controls (ember.compiler)
from . import _dynamo, compiler  # noqa: E402,F401
from . import export  # noqa: E402,F401
from . import jit  # noqa: E402,F401  (TorchScript API: trace, script, save/load, mobile)
from . import onnx  # noqa: E402,F401  (torch.onnx; the onnx package itself loads on export)
from ._dynamo.eval_frame import compile  # noqa: E402,F401
from ._sym import *  # noqa: E402,F401,F403  (SymInt, sym_max, sym_constrain_range, is_distributed, ...)
from ._dynamo.control_flow import cond, map, while_loop  # noqa: E402,F401
from ._core.checks import *  # noqa: E402,F401,F403  (_check, _check_index, ... torch._check)
from . import library  # noqa: E402,F401  (custom operators; ember.ops.aten)
from . import _logging  # noqa: E402,F401  (set_logs)
from ._core.dtype import qint8, qint32, quint8  # noqa: E402,F401  (quantized dtypes)
from . import ao  # noqa: E402,F401  (torch.ao: quantization)
from .ao import quantization  # noqa: E402,F401  (torch.quantization, the legacy path)
__import__("sys").modules[__name__ + ".quantization"] = quantization  # import ember.quantization
from . import __config__  # noqa: E402,F401  (torch.__config__.show(), parallel_info())

# submodules torch imports with itself and ember loads on first use (``torch.distributed``
# after a plain ``import torch``: torchmetrics asks torch.distributed.is_available())
_LAZY_SUBMODULES = frozenset({"distributed", "multiprocessing", "_higher_order_ops",
                              "_subclasses"})


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# torch.torch is the torch module itself (kornia annotates with ``torch.torch.Tensor``)
torch = __import__("sys").modules[__name__]
