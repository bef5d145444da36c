"""Selective activation checkpointing (torch's SAC): a policy decides, operator by operator,
which outputs of a checkpointed function are kept from the forward pass; the recomputation
during backward takes those from the cache instead of computing them again.

Two dispatch modes share one cache: the forward one asks the policy about every operator
call and keeps the outputs it says to save, keyed by operator and call number; the
recompute one hands them back to the same calls (autograd records the operator on the
recomputed inputs as usual, so gradients are unchanged).  A call whose inputs do not match
the forward's (shapes, dtypes) is computed, never answered from a wrong entry.  In-place
and view operators are always recomputed: their outputs alias tensors of the recomputation.
"""
import enum
from collections import defaultdict

from .._core.dispatch import DispatchMode
from .._core.tensor import Tensor

__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext", "SAC_IGNORED_OPS",
           "create_selective_checkpoint_contexts"]


class CheckpointPolicy(enum.Enum):
    """Whether an operator's output is saved during the forward pass (``MUST_SAVE``,
    ``PREFER_SAVE``), recomputed during backward (``MUST_RECOMPUTE``, ``PREFER_RECOMPUTE``)
    or saved on the CPU (``MUST_CPU_OFFLOAD``, ``PREFER_CPU_OFFLOAD``: ember's tensors are
    host arrays, so these save as the first two do)."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_SAVE = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
         CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD)

# metadata queries never reach ember's dispatcher as operators: nothing to ignore
SAC_IGNORED_OPS = set()


class SelectiveCheckpointContext:
    """Context passed to the policy function: ``is_recompute`` (always False: the policy
    is asked during the forward pass only) and ``op_output``."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


def _meta(args):
    return tuple((tuple(a.shape), a.dtype) if isinstance(a, Tensor) else None for a in args)


def _cacheable(op):
    return not hasattr(op, "base") and not getattr(op, "view", False)


class _Caching(DispatchMode):
    """Forward pass: ask the policy, keep what it says to save."""

    def __init__(self, policy_fn, storage):
        self.policy_fn = policy_fn
        self.storage = storage
        self.calls = defaultdict(int)

    def __ember_dispatch__(self, op, args, kwargs):
        out = op(*args, **kwargs)
        k = self.calls[op]
        self.calls[op] += 1
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                op, *args, **kwargs)
        if isinstance(policy, bool):  # older policies answer "save?"
            policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
        if not isinstance(policy, CheckpointPolicy):
            raise ValueError(f"Expected policy_fn to return a CheckpointPolicy, got {policy!r}")
        if policy in _SAVE and _cacheable(op):
            self.storage[(op, k)] = (_meta(args), out)
        return out


class _Cached(DispatchMode):
    """Recomputation: the saved outputs of the same calls, the others computed."""

    def __init__(self, storage, allow_cache_entry_mutation):
        self.storage = storage
        self.allow_mutation = allow_cache_entry_mutation
        self.calls = defaultdict(int)

    def __ember_dispatch__(self, op, args, kwargs):
        k = self.calls[op]
        self.calls[op] += 1
        entry = self.storage.pop((op, k), None)
        if entry is not None and entry[0] == _meta(args):
            out = entry[1]
            if self.allow_mutation:  # the caller may write into it: hand out a copy
                out = tuple(o.clone() for o in out) if isinstance(out, tuple) else out.clone()
            return out
        return op(*args, **kwargs)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """Helper to avoid recomputing certain ops during activation checkpointing: returns the
    pair of context managers for ``checkpoint(..., context_fn=...)``.

    ``policy_fn_or_list``: a function ``policy_fn(ctx, op, *args, **kwargs)`` returning a
    `CheckpointPolicy` for each operator call, or a list of operators whose outputs are
    saved (all others are recomputed)."""
    if isinstance(policy_fn_or_list, list):
        ops = policy_fn_or_list
        for op in ops:
            if not callable(op) or isinstance(op, type):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. ")

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = {}
    return _Caching(policy_fn, storage), _Cached(storage, allow_cache_entry_mutation)
