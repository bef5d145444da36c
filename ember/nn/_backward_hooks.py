"""Full backward hooks of Modules, wired with two identity autograd Functions.

The module's tensor inputs pass through ``_Identity`` before forward and its
tensor outputs after it.  Backward through the output identity sees
grad_output (and runs backward pre-hooks, which may replace it); backward
through the input identity sees grad_input and runs the backward hooks, which
may replace it.  When no input requires grad the hooks run with
``grad_input=(None,)*n`` right after grad_output is known, as in PyTorch.
"""
from .._core.tensor import Tensor
from ..autograd.function import Function


class _Identity(Function):
    @staticmethod
    def forward(ctx, hook_state, which, *tensors):
        ctx.hook_state = hook_state
        ctx.which = which
        return tuple(t.view_as(t) if isinstance(t, Tensor) else t for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        grads = ctx.hook_state.on_grads(ctx.which, grads)
        return (None, None) + tuple(grads)


class BackwardHook:
    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_inputs = 0
        self.inputs_need_grad = False

    def _wrap(self, values, which):
        idx = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        if not idx:
            return values, False
        tensors = [values[i] for i in idx]
        if not any(t.requires_grad for t in tensors):
            return values, False
        out = _Identity.apply(self, which, *tensors)
        if not isinstance(out, tuple):
            out = (out,)
        values = list(values)
        for i, t in zip(idx, out):
            values[i] = t
        return tuple(values), True

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        new, self.inputs_need_grad = self._wrap(tuple(args), "input")
        return new

    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        new, _ = self._wrap(values, "output")
        return new[0] if single else new

    def on_grads(self, which, grads):
        from .modules import module as _mod
        m = self.module
        # hooks common to all modules run before the module's own, as in torch
        pre_hooks = list(_mod._global_backward_pre_hooks.values()) + \
            list(m._backward_pre_hooks.values())
        hooks = list(_mod._global_backward_hooks.values()) + list(m._backward_hooks.values())
        if which == "output":
            for hook in pre_hooks:
                r = hook(m, tuple(grads))
                if r is not None:
                    grads = tuple(r)
            self.grad_output = tuple(grads)
            if not self.inputs_need_grad:
                for hook in hooks:
                    hook(m, (None,) * max(self.n_inputs, 1), self.grad_output)
            return grads
        for hook in hooks:
            r = hook(m, tuple(grads), self.grad_output)
            if r is not None:
                if len(r) != len(grads):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                       f"got {len(r)}, but expected {len(grads)}")
                grads = tuple(r)
        return grads
