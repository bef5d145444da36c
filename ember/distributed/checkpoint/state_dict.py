"""Model and optimizer state dicts keyed by parameter name (FQN), for distributed checkpoints.

An optimizer's own ``state_dict`` numbers parameters by position, which breaks as soon as
the model's parameter order or the optimizer's grouping changes; here optimizer state is
keyed by the parameter's fully qualified name (``"encoder.fc.weight"``), as torch's
``torch.distributed.checkpoint.state_dict`` does.  A `ZeroRedundancyOptimizer` contributes
the state of the parameters this rank owns, so each rank saves only its own shard and a
load at another world size gives each rank what it now owns.  DDP's ``module.`` prefix is
dropped, so a checkpoint moves between wrapped and unwrapped models.
"""
from dataclasses import dataclass

from ..tensor._api import DTensor

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict",
           "get_state_dict", "set_model_state_dict", "set_optimizer_state_dict",
           "set_state_dict"]


@dataclass
class StateDictOptions:
    """How `get_state_dict` and friends build or apply state dicts.

    - ``full_state_dict``: DTensor values become full tensors.
    - ``cpu_offload``: with ``full_state_dict``, only rank 0 keeps the values (ember's
      tensors are on the CPU already).
    - ``ignore_frozen_params``: leave out parameters with ``requires_grad=False``.
    - ``keep_submodule_prefixes``: with ``submodules``, keep their full names.
    - ``strict``: `set_model_state_dict` loads strictly.
    - ``broadcast_from_rank0``: the setters take rank 0's state dict for every rank.
    - ``flatten_optimizer_state_dict``: one flat dict ``state.<fqn>.<key>`` /
      ``param_groups.<fqn>.<key>`` instead of the nested form.
    """
    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


def _dist():
    from ... import distributed as dist
    return dist


def _unwrap(model):
    from ...nn.parallel import DistributedDataParallel
    return model.module if isinstance(model, DistributedDataParallel) else model


def _fqns(model):
    """id(parameter) -> name, without DDP's prefix; shared parameters keep the first name."""
    out = {}
    for name, p in _unwrap(model).named_parameters(remove_duplicate=False):
        out.setdefault(id(p), name)
    return out


def _optimizers(optimizers):
    from ...optim import Optimizer
    if isinstance(optimizers, Optimizer):
        return [optimizers]
    return list(optimizers)


def _local_optim(optim):
    from ..optim import ZeroRedundancyOptimizer
    return optim.optim if isinstance(optim, ZeroRedundancyOptimizer) else optim


def _rank0_only(options):
    dist = _dist()
    return options.full_state_dict and options.cpu_offload and dist.is_initialized() and \
        dist.get_rank() != 0


def _full(value):
    return value.full_tensor() if isinstance(value, DTensor) else value


def get_model_state_dict(model, *, submodules=None, options=None):
    """The model's state dict keyed by FQN (without DDP's ``module.`` prefix)."""
    options = options or StateDictOptions()
    inner = _unwrap(model)
    sd = inner.state_dict()
    if options.ignore_frozen_params:
        frozen = {n for n, p in inner.named_parameters() if not p.requires_grad}
        sd = {k: v for k, v in sd.items() if k not in frozen}
    if submodules:
        prefixes = []
        for name, m in inner.named_modules():
            if any(m is s for s in submodules):
                prefixes.append(name + "." if name else "")
        kept = {}
        for k, v in sd.items():
            for pre in prefixes:
                if k.startswith(pre):
                    kept[k if options.keep_submodule_prefixes else k[len(pre):]] = v
                    break
        sd = kept
    if options.full_state_dict:
        sd = {k: _full(v) for k, v in sd.items()}
    if _rank0_only(options):
        return {}
    return dict(sd)


def _init_optim_state(optim):
    """Creates empty-history optimizer state (as after a zero-gradient step with lr 0), so
    a fresh optimizer has tensors for a checkpoint to load into."""
    from .._ember import zeros_like
    opt = _local_optim(optim)
    if opt.state:
        return
    params = [p for g in opt.param_groups for p in g["params"] if p.requires_grad]
    if not params:
        return
    saved_grads = [p.grad for p in params]
    lrs = []
    for p in params:
        p.grad = zeros_like(p)
    for g in opt.param_groups:
        lrs.append(g.get("lr"))
        if "lr" in g:
            g["lr"] = 0.0
    try:
        opt.step()
    finally:
        for g, lr in zip(opt.param_groups, lrs):
            if lr is not None:
                g["lr"] = lr
        for p, grad in zip(params, saved_grads):
            p.grad = grad


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None):
    """The optimizers' state keyed by parameter FQN: ``{"state": {fqn: {...}},
    "param_groups": [{..., "params": [fqn, ...]}]}`` (one dict for all ``optimizers``)."""
    options = options or StateDictOptions()
    fqns = _fqns(model)
    state, groups = {}, []
    for optim in _optimizers(optimizers):
        _init_optim_state(optim)
        for p, st in _local_optim(optim).state.items():
            if id(p) not in fqns:
                raise KeyError("get_optimizer_state_dict: the optimizer holds a parameter "
                               "that is not in the model")
            state[fqns[id(p)]] = {k: (_full(v) if options.full_state_dict else v)
                                  for k, v in st.items()}
        for g in optim.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [fqns[id(p)] for p in g["params"]]
            groups.append(packed)
    if _rank0_only(options):
        return {}
    if options.flatten_optimizer_state_dict:
        return _flatten_optim(state, groups)
    return {"state": state, "param_groups": groups}


def _flatten_optim(state, groups):
    flat = {}
    for fqn, st in state.items():
        for k, v in st.items():
            flat[f"state.{fqn}.{k}"] = v
    for g in groups:
        for fqn in g["params"]:
            for k, v in g.items():
                if k != "params":
                    flat[f"param_groups.{fqn}.{k}"] = v
    return flat


def _unflatten_optim(flat, optimizers, fqns):
    if "state" in flat and "param_groups" in flat:
        return flat
    state, groups = {}, []
    names = sorted(set(fqns.values()), key=len, reverse=True)
    for key, v in flat.items():
        if not key.startswith("state."):
            continue
        rest = key[len("state."):]
        for n in names:
            if rest.startswith(n + "."):
                state.setdefault(n, {})[rest[len(n) + 1:]] = v
                break
    for optim in optimizers:
        for g in optim.param_groups:
            ps = [fqns[id(p)] for p in g["params"]]
            packed = {"params": ps}
            if ps:
                prefix = f"param_groups.{ps[0]}."
                packed.update({k[len(prefix):]: v for k, v in flat.items()
                               if k.startswith(prefix)})
            groups.append(packed)
    return {"state": state, "param_groups": groups}


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    """``(model state dict, optimizer state dict)``, both keyed by FQN."""
    return (get_model_state_dict(model, submodules=submodules, options=options),
            get_optimizer_state_dict(model, optimizers, submodules=submodules,
                                     options=options))


def _from_rank0(sd, options):
    dist = _dist()
    if options.broadcast_from_rank0 and dist.is_initialized():
        box = [sd if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]
    return sd


def set_model_state_dict(model, model_state_dict, *, options=None):
    """Loads an FQN-keyed model state dict (DTensor values are gathered to full tensors);
    returns ``load_state_dict``'s missing/unexpected keys."""
    options = options or StateDictOptions()
    sd = _from_rank0(model_state_dict, options)
    sd = {k: _full(v) for k, v in sd.items()}
    return _unwrap(model).load_state_dict(sd, strict=options.strict)


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None):
    """Loads an FQN-keyed optimizer state dict into ``optimizers``: each parameter gets the
    state saved under its name, each group the hyperparameters of the saved group that held
    its parameters, whatever the order of parameters now."""
    options = options or StateDictOptions()
    optims = _optimizers(optimizers)
    fqns = _fqns(model)
    osd = _unflatten_optim(_from_rank0(optim_state_dict, options), optims, fqns)
    saved_state = osd.get("state", {})
    saved_groups = osd.get("param_groups", [])
    by_fqn = {}
    for i, g in enumerate(saved_groups):
        for n in g.get("params", []):
            by_fqn.setdefault(n, i)
    for optim in optims:
        index, state, groups = 0, {}, []
        for pos, g in enumerate(optim.param_groups):
            ids = []
            for p in g["params"]:
                n = fqns.get(id(p))
                if n is None:
                    raise KeyError("set_optimizer_state_dict: the optimizer holds a parameter "
                                   "that is not in the model")
                if n in saved_state:
                    state[index] = {k: _full(v) for k, v in saved_state[n].items()}
                ids.append(index)
                index += 1
            names = [fqns[id(p)] for p in g["params"]]
            src = next((by_fqn[n] for n in names if n in by_fqn), None)
            if src is None:
                if pos >= len(saved_groups):
                    raise KeyError(f"set_optimizer_state_dict: no saved parameter group holds "
                                   f"the parameters {names}")
                src = pos
            packed = {k: v for k, v in saved_groups[src].items() if k != "params"}
            packed["params"] = ids
            groups.append(packed)
        optim.load_state_dict({"state": state, "param_groups": groups})


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    """`set_model_state_dict` and `set_optimizer_state_dict` together; returns the model's
    missing/unexpected keys."""
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys
