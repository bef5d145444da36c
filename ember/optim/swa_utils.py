"""Stochastic Weight Averaging and EMA (``torch.optim.swa_utils``).

`AveragedModel` keeps a running average (SWA by default, EMA with
`get_ema_multi_avg_fn`) of a model's parameters, and of its buffers with
``use_buffers=True``; `update_bn` recomputes BatchNorm statistics for the averaged
weights; `SWALR` anneals each group's learning rate to a constant SWA value.
"""
import itertools
import math
import warnings
from copy import deepcopy

from .._core.tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """Get the function applying exponential moving average (EMA) across multiple params."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """Get the function applying stochastic weight average (SWA) across multiple params."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
            w = 1 / (num_averaged + 1)
            w = w.item() if isinstance(w, Tensor) else w
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, w)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                diff = p_model - p_avg
                if isinstance(num_averaged, Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """Get the function applying exponential moving average (EMA) across a single param."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """Get the function applying stochastic weight average (SWA) across a single param."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """Implements averaged model for Stochastic Weight Averaging (SWA) and Exponential
    Moving Average (EMA).

    Args:
        model (Module): model to use with SWA/EMA (a deep copy is averaged)
        device (device, optional): if provided, the averaged model will be stored on
            the ``device``
        avg_fn (function, optional): the averaging function used to update parameters
            (``avg_fn(averaged, current, num_averaged) -> new averaged``)
        multi_avg_fn (function, optional): the averaging function used to update
            parameters in place (lists of averaged and current params, num_averaged)
        use_buffers (bool): if ``True``, it will compute running averages for both the
            parameters and the buffers of the model. (default: ``False``)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        from .._core.dtype import long as _long
        from ..ops.creation import tensor as _tensor
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=_long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Update model parameters (the first call copies them)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged.item()) == 0
        with no_grad():
            for p_avg, p_model in zip(mine, theirs):
                p_m = p_model.detach().to(p_avg.device)
                averaged.append(p_avg.detach())
                current.append(p_m)
                if first:
                    p_avg.detach().copy_(p_m)
            if not first:
                if self.avg_fn is None:
                    fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                    # torch groups by device and dtype: each group gets one call
                    groups = {}
                    for a, c in zip(averaged, current):
                        groups.setdefault((str(a.device), a.dtype), ([], []))
                        groups[(str(a.device), a.dtype)][0].append(a)
                        groups[(str(a.device), a.dtype)][1].append(c)
                    for avg_list, cur_list in groups.values():
                        fn(avg_list, cur_list, self.n_averaged)
                else:
                    for a, c in zip(averaged, current):
                        a.copy_(self.avg_fn(a, c, self.n_averaged))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def update_bn(loader, model, device=None):
    """Update BatchNorm running_mean, running_var buffers in the model: one pass over
    ``loader`` in train mode with cumulative averaging (``momentum=None``), then the
    modules' momenta and the model's mode are restored.

    Args:
        loader: dataset loader to compute the activation statistics on; each batch is a
            tensor or a list/tuple whose first element is the input
        model: model for which we seek to update BatchNorm statistics
        device: if set, data will be transferred to ``device`` before being passed
    """
    from ..nn.modules.normalization import _BatchNorm
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, m in momenta.items():
        module.momentum = m
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals the learning rate in each parameter group to a fixed value.

    Args:
        optimizer (Optimizer): wrapped optimizer
        swa_lr (float or list): the learning rate value for all param groups together or
            separately for each group.
        anneal_epochs (int): number of epochs in the annealing phase (default: 10)
        anneal_strategy (str): "cos" or "linear" (default: "cos")
        last_epoch (int): the index of the last epoch (default: -1)
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        # the lr the annealing started from, recovered from the current one
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """Get learning rate."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please "
                          "use `get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" \
            else self._linear_anneal

    def state_dict(self):
        """Return the state of the scheduler as a dict (all but the optimizer and the
        anneal function)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Load the scheduler's state."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

