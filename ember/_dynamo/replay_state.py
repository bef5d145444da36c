"""What a replay reads of modules and optimizers besides tensor values, and where.

`Fingerprint`: their attributes, parameters, settings, state and hooks, taken when a plan
is made and looked at again on every replayed call.  `snapshot`: the fingerprints (and each
leaf's ``.grad``) of everything a call could reach, taken before a capturing call, so a
plan is made only from a call that left them as it found them.  `_settings_read`: the
optimizer settings a graph takes as inputs, read from their param group on replay.
"""
import operator
import types

from .._core.tensor import Tensor
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer, _global_optimizer_post_hooks, \
    _global_optimizer_pre_hooks

__all__ = ["Fingerprint", "snapshot"]


class Fingerprint:
    """What a forward or an optimizer step may read of modules and optimizers, besides
    tensor values: every attribute, parameter, buffer, submodule, param group setting
    (lr, betas), group parameter and state value (step counters, moment buffers), by
    identity, and the sizes of their hook dicts and containers (``loose``: the
    ``(id(group), key)`` settings a graph reads as inputs, of which only the type counts).
    Identity is stricter than equality (an lr set again to an equal float is a change): a
    change runs the Python, which may compile again, so it costs time, never correctness.
    What to look at (modules, hook dicts, parameters, state keys) is found once; `holds`
    looks again with C-level loops: it is on every replayed call."""
    __slots__ = ("dicts", "hooks", "params", "opts", "state_keys", "loose", "objs", "nums")

    def __init__(self, roots, loose=()):
        mods = [m for r in roots if isinstance(r, Module) for m in r.modules()]
        self.dicts = [m.__dict__ for m in mods]
        self.hooks = [d[k] for d in self.dicts for k in _HOOK_DICTS if d.get(k) is not None]
        self.params = [p for d in self.dicts for p in d["_parameters"].values()
                       if p is not None]
        self.opts = [r for r in roots if isinstance(r, Optimizer)]
        self.state_keys = [list(o.state) for o in self.opts]
        self.loose = loose
        self.objs, self.nums = self._take()

    def _take(self):
        objs, nums = [], [len(d) for d in self.dicts]
        ext = objs.extend
        for d in self.dicts:  # a new or replaced entry shows in these (and len(d))
            ext(d.values())
            ext(d["_parameters"].values())
            ext(d["_buffers"].values())
            ext(d["_modules"].values())
        nums.extend(map(len, self.hooks))
        objs.extend([p._requires_grad for p in self.params])
        loose = self.loose
        for o, keys in zip(self.opts, self.state_keys):
            d = o.__dict__
            ext(d.values())
            nums.append(len(d))
            for k in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks"):
                nums.append(len(d.get(k) or ()))
            for g in o.param_groups:
                if loose:  # settings the graph takes as inputs: their type only
                    ext([type(v) if (id(g), k) in loose else v for k, v in g.items()])
                else:
                    ext(g.values())
                ext(g["params"])
                nums.append(len(g))
                nums.append(len(g["params"]))
            state = o.state
            nums.append(len(state))
            for p in keys:
                st = state.get(p)
                objs.append(st)
                if st is not None:
                    ext(st.values())
                    nums.append(len(st))
        if self.opts:
            nums.append(len(_global_optimizer_pre_hooks))
            nums.append(len(_global_optimizer_post_hooks))
        return objs, nums

    def same(self, other):
        a, b = self.objs, other.objs
        return self.nums == other.nums and len(a) == len(b) and all(map(operator.is_, a, b))

    def holds(self):
        """Whether the state is still what it was when this fingerprint was taken."""
        objs, nums = self._take()
        a = self.objs
        return nums == self.nums and len(objs) == len(a) and all(map(operator.is_, objs, a))


# a module's hooks: their number is guarded (the dicts themselves stay the same objects)
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
               "_backward_pre_hooks", "_forward_hooks_with_kwargs",
               "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called",
               "_state_dict_hooks", "_load_state_dict_pre_hooks")


def _optimizer_params(opts):
    return [p for o in opts for g in o.param_groups for p in g["params"]]


def _roots_of(compiled, args, kwargs, cells=(), global_values=()):
    """(modules, optimizers) a call may read the state of: the compiled module, those among
    the arguments, and those the function's globals and closure hold."""
    mods, opts = [], []
    seen = set()
    cands = [compiled.module] + list(args) + list(kwargs.values()) + list(cells) + \
        list(global_values)
    for x in cands:
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Module):
            mods.append(x)
        elif isinstance(x, Optimizer):
            opts.append(x)
    return mods, opts


def snapshot(compiled, args, kwargs):
    """The state of every module and optimizer a call could reach, before the call: a plan
    is made only when the call left it as it found it (a first optimizer step creates its
    state; a replay would not)."""
    fn = getattr(compiled.fn, "__func__", compiled.fn)
    cells = []
    for c in getattr(fn, "__closure__", None) or ():
        try:
            cells.append(c.cell_contents)
        except ValueError:
            pass
    g = getattr(fn, "__globals__", None) or {}
    code = getattr(fn, "__code__", None)
    names = _code_names(code, set()) if code is not None else ()
    glob = [g[n] for n in names if n in g]
    mods, opts = _roots_of(compiled, args, kwargs, cells, glob)
    state = {id(r): Fingerprint([r]) for r in mods + opts}
    grads = {}
    for p in _leaf_candidates(mods, opts, args, kwargs):
        # the .grad object itself: an id could be reused by a tensor made during the call
        grads[id(p)] = p.__dict__.get("_grad")
    return state, grads


def _code_names(code, seen):
    if code in seen:
        return set()
    seen.add(code)
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c, seen)
    return names


def _leaf_candidates(mods, opts, args, kwargs):
    out = []
    for m in mods:
        out.extend(m.parameters())
    out.extend(_optimizer_params(opts))
    out.extend(x for x in _flat_args(args, kwargs)
               if isinstance(x, Tensor) and x._requires_grad)
    return out


def _flat_args(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if type(a) in (tuple, list):
            yield from a
        elif type(a) is dict:
            yield from a.values()
        else:
            yield a


def _settings_read(opts, extra_inputs):
    """(position, group, key) of each float graph input that is an optimizer setting (the
    very object in one param group, such as an lr a scheduler sets): a replay reads it
    from the group, so a new value needs no Python.  Ambiguous objects (one float in
    several places) stay guarded as they are."""
    if not opts or not extra_inputs:
        return ()
    places = {}
    for o in opts:
        for g in o.param_groups:
            for k, v in g.items():
                if type(v) is float:
                    places.setdefault(id(v), []).append((g, k, v))
    out = []
    for pos, v in enumerate(extra_inputs):
        where = places.get(id(v))
        if type(v) is float and where is not None and len(where) == 1 and where[0][2] is v \
                and sum(x is v for x in extra_inputs) == 1:
            out.append((pos, where[0][0], where[0][1]))
    return tuple(out)
