"""Compile backends: callables ``(gm, example_inputs) -> compiled``, as in torch.

Built in: ``"eager"`` runs the captured ops (with autograd per op), ``"aot_eager"``
partitions the joint forward+backward graph and runs both halves op by op, and
``"inductor"`` generates C (`ember._inductor`) for both halves.  `register_backend` adds
more; ``ember.compile(backend=callable)`` takes any callable.
"""
from .common import aot_autograd
from .pycode import array_runner, python_runner

__all__ = ["register_backend", "lookup_backend", "list_backends", "aot_autograd"]

_BACKENDS = {}


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register ``compiler_fn`` under ``name`` (default: its ``__name__``); usable as a
    decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    _BACKENDS[name or compiler_fn.__name__] = compiler_fn
    return compiler_fn


def lookup_backend(backend):
    """The callable for ``backend`` (a name or a callable)."""
    if callable(backend):
        return backend
    if isinstance(backend, str):
        fn = _BACKENDS.get(backend)
        if fn is not None:
            return fn
        from ..exc import InvalidBackend
        raise InvalidBackend(f"Invalid backend: {backend!r}, see `ember._dynamo.list_backends()` "
                             f"for available backends: {list_backends(exclude_tags=())}")
    raise TypeError(f"backend must be a string or a callable, got {type(backend).__name__}")


def list_backends(exclude_tags=("debug", "experimental")):
    """The names of the registered backends."""
    return sorted(_BACKENDS)


def eager(gm, example_inputs):
    """Run the captured graph op by op, autograd recording each op (torch's "eager").
    A graph run without autograd (no grad-mode nodes, no input requiring grad) calls the
    kernels on the arrays directly."""
    from ..graph_build import set_grad_enabled
    if gm.meta.get("ember_needs_grad") is False:  # run with autograd off (ember's cache)
        return array_runner(gm)
    if any(n.target is set_grad_enabled for n in gm.graph.nodes) or any(
            n.meta.get("requires_grad") for n in gm.graph.nodes if n.op == "placeholder"):
        return python_runner(gm)
    return array_runner(gm)


def _inductor_inner(gm, example_inputs):
    try:
        from ..._inductor import compile_fx
    except ImportError:
        return python_runner(gm)  # the code generator is not built yet: run the ops
    return compile_fx(gm, example_inputs)


register_backend(eager, "eager")
register_backend(aot_autograd(fw_compiler=lambda gm, ex: python_runner(gm)), "aot_eager")
register_backend(aot_autograd(fw_compiler=_inductor_inner), "inductor")
