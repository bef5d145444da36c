"""Eager-mode dynamic quantization: ``quantize_dynamic`` and the qconfig propagation and
module swapping it is made of (``torch.ao.quantization.quantize``)."""
import copy
import itertools

from ..._core import dtype as _dt
from ...nn.modules import linear as _linear, rnn as _rnn
from .qconfig import default_dynamic_qconfig, float16_dynamic_qconfig
from .quantization_mappings import get_default_dynamic_quant_module_mappings

__all__ = ["quantize_dynamic", "propagate_qconfig_", "convert", "swap_module"]

# the float modules quantize_dynamic quantizes by default, as torch's list
_DEFAULT_DYNAMIC_TYPES = (_linear.Linear, _rnn.LSTM, _rnn.GRU, _rnn.LSTMCell, _rnn.RNNCell,
                          _rnn.GRUCell)


def _propagate(module, qconfig_dict, parent_qconfig, prefix):
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate(child, qconfig_dict, qconfig, f"{prefix}.{name}" if prefix else name)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Give every submodule a ``qconfig`` attribute: its own entry in ``qconfig_dict`` (by
    type, then by qualified name) or else its parent's."""
    _propagate(module, qconfig_dict or {}, None, "")


def swap_module(mod, mapping, custom_module_class_mapping=None, use_precomputed_fake_quant=False):
    """The quantized replacement of ``mod`` if it has a qconfig and a mapping, else ``mod``."""
    if getattr(mod, "qconfig", None) is not None and type(mod) in mapping:
        new = mapping[type(mod)].from_float(mod, use_precomputed_fake_quant)
        for hook in mod._forward_pre_hooks.values():
            new.register_forward_pre_hook(hook)
        for hook in mod._forward_hooks.values():
            new.register_forward_hook(hook)
        return new
    return mod


def _convert(module, mapping):
    swapped = {}
    for name, child in module.named_children():
        _convert(child, mapping)
        swapped[name] = swap_module(child, mapping)
    for name, new in swapped.items():
        module._modules[name] = new


def _remove_qconfig(module):
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.__dict__["qconfig"]


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Swap the submodules of ``module`` that have a qconfig for their quantized versions
    (``mapping``: float type -> quantized type; default: the dynamic mapping)."""
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def quantize_dynamic(model, qconfig_spec=None, dtype=_dt.qint8, mapping=None, inplace=False):
    r"""Converts a float model to dynamic (i.e. weights-only) quantized model.

    Replaces specified modules with dynamic weight-only quantized versions and output the
    quantized model.  For simplest usage provide `dtype` argument that can be float16 or
    qint8.  Weight-only quantization by default is performed for layers with large weights
    size - i.e. Linear and RNN variants.

    Args:
        model: input model
        qconfig_spec: Either a dictionary that maps from name or type of submodule to
            quantization configuration (QConfig instances), or a set of types and/or
            submodule names to apply dynamic quantization to, in which case the `dtype`
            argument is used to specify the bit-width
        dtype: ``ember.qint8`` (int8 weights, activations quantized per call) or
            ``ember.float16`` (half-precision weights)
        mapping: maps type of a submodule to a type of corresponding dynamically quantized
            version with which the submodule needs to be replaced
        inplace: carry out model transformations in-place, the original module is mutated

    ember quantizes ``Linear``, ``LSTM``, ``GRU``, ``LSTMCell``, ``GRUCell`` and ``RNNCell``;
    weight-only ``Embedding`` quantization (``quint8``/``quint4x2``) is not available.
    """
    if qconfig_spec is None:
        if dtype is _dt.qint8:
            qconfig_spec = dict.fromkeys(_DEFAULT_DYNAMIC_TYPES, default_dynamic_qconfig)
        elif dtype is _dt.float16:
            qconfig_spec = dict.fromkeys(_DEFAULT_DYNAMIC_TYPES, float16_dynamic_qconfig)
        elif dtype is _dt.quint8:
            raise RuntimeError("quantize_dynamic: weight-only quantization of Embedding/"
                               "EmbeddingBag to ember.quint8 is not supported by ember")
        else:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. "
                             f"Provide full qconfig please")
    elif isinstance(qconfig_spec, set):
        if dtype is _dt.qint8:
            default_qconfig = default_dynamic_qconfig
        elif dtype is _dt.float16:
            default_qconfig = float16_dynamic_qconfig
        elif dtype is _dt.quint8:
            raise RuntimeError("quantize_dynamic: weight-only quantization of Embedding/"
                               "EmbeddingBag to ember.quint8 is not supported by ember")
        else:
            raise RuntimeError("Unknown dtype specified for quantize_dynamic: ", str(dtype))
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(default_qconfig)))
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
