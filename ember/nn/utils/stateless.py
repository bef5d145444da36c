"""``functional_call``: call a module with some parameters and buffers swapped for given
tensors, restoring the originals afterwards."""
import contextlib



__all__ = ["functional_call"]


def _owner(module, key):
    *path, name = key.split(".")
    m = module
    for p in path:
        m = getattr(m, p)
    return m, name


def _tied_names(module):
    """Groups of names (parameters and buffers) that refer to one tensor object."""
    by_id = {}
    for n, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        by_id.setdefault(id(t), []).append(n)
    return [names for names in by_id.values() if len(names) > 1]


@contextlib.contextmanager
def _reparametrize(module, tensors, tie_weights, strict):
    tensors = dict(tensors)
    if tie_weights:
        for group in _tied_names(module):
            given = [n for n in group if n in tensors]
            if not given:
                continue
            values = {id(tensors[n]) for n in given}
            if len(values) > 1:
                raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, "
                                 f"which are tied. Consider using tie_weights=False")
            for n in group:
                tensors.setdefault(n, tensors[given[0]])
    if strict:
        names = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(names - set(tensors))
        unexpected = sorted(set(tensors) - names)
        if missing or unexpected:
            msg = "Error(s) in reparametrizing for {}:".format(type(module).__name__)
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(repr(k) for k in missing) + "."
            raise RuntimeError(msg)
    saved = []
    try:
        for key, value in tensors.items():
            m, name = _owner(module, key)
            if name in m._parameters:
                saved.append((m._parameters, name, m._parameters[name]))
                m._parameters[name] = value
            elif name in m._buffers:
                saved.append((m._buffers, name, m._buffers[name]))
                m._buffers[name] = value
            else:
                had = name in m.__dict__
                saved.append((m.__dict__, name, m.__dict__.get(name)) if had else
                             (m.__dict__, name, _MISSING))
                object.__setattr__(m, name, value)
        yield
    finally:
        for store, name, old in reversed(saved):
            if old is _MISSING:
                store.pop(name, None)
            else:
                store[name] = old


_MISSING = object()


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Perform a functional call on the module by replacing its parameters and buffers with
    the provided ones (deprecated here: use ``ember.func.functional_call``)."""
    import warnings
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    """functional_call without the deprecation warning (``ember.func.functional_call``)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        tensors = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in tensors:
                    raise ValueError(f"{k!r} appeared in multiple dictionaries; behavior of "
                                     f"functional call is ambiguous")
                tensors[k] = v
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, tie_weights, strict):
        return module(*args, **kwargs)



