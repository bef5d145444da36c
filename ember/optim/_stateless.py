"""``swap_in_optimizer_params_and_state``: run an optimizer on other tensors for a while.

Inside the context the optimizer's groups hold the supplied parameters and
hyper-parameters, and its state is the supplied ``state_dict()``-shaped state re-keyed
by those parameters; on exit the live groups and state come back unchanged.
In-place updates of the supplied state tensors are seen by the caller (the
per-parameter dicts are shallow copies); new entries stay inside the context.
"""
import contextlib
from collections import defaultdict

from .._core.tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _checked_state(state):
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           f"packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           f"packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           f"dictionaries.")
    return state


def _checked_group_ids(idx, live, group):
    if not isinstance(group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           f"param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(live["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                           f"params than the live optimizer param group.")
    only_swapin = [k for k in group if k not in live]
    only_live = [k for k in live if k not in group]
    if only_swapin or only_live:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           f"exactly match the live optimizer group keys for group {idx}. "
                           f"Keys only in swap-in: {only_swapin}. Keys only in live: "
                           f"{only_live}.")
    return ids


def _plan(optimizer, swapin_parameters, swapin_optim_state):
    """Validate the inputs; return the swap-in state and, per group, (group, params)."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    flat = list(swapin_parameters.values())  # in optimizer.param_groups order
    start, seen, plan = 0, set(), []
    for idx, (live, group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _checked_group_ids(idx, live, group)
        seen.update(ids)
        end = start + len(ids)
        if end > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               f"optimizer.param_groups ordering.")
        plan.append((group, flat[start:end]))
        start = end
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Temporarily replace an optimizer's parameters and state with the supplied params and
    optim states, then restore them on exit.

    Args:
        optimizer: the live optimizer; its state must already be initialized.
        swapin_parameters: tensors to use as parameters during the context, in the same
            order as the optimizer's parameters (most commonly ``named_parameters()``).
        swapin_optim_state: an ``optimizer.state_dict()``-shaped dict (``{"state": ...,
            "param_groups": ...}``) holding the state and hyper-parameters to install.
    """
    state, plan = _plan(optimizer, swapin_parameters, swapin_optim_state)
    saved_state = optimizer.state
    saved_groups = [dict(g) for g in optimizer.param_groups]
    try:
        new_state = defaultdict(dict)
        for live, (group, params) in zip(optimizer.param_groups, plan):
            live["params"] = params
            for k, v in group.items():
                if k != "params":
                    live[k] = v
            for p, pid in zip(params, group["params"]):
                new_state[p] = dict(state.get(pid, {}))
        optimizer.state = new_state
        yield
    finally:
        for live, saved in zip(optimizer.param_groups, saved_groups):
            live.clear()
            live.update(saved)
        optimizer.state = saved_state
