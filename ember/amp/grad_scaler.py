"""``GradScaler``: dynamic loss scaling for mixed-precision training."""
import warnings
from collections import defaultdict
from enum import Enum

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_state():
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Scales the loss so that small low-precision gradients do not flush to zero, unscales
    the gradients before the optimizer step, skips steps whose gradients hold inf/NaN and
    adapts the scale (backoff on overflow, growth after ``growth_interval`` clean steps)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        from .. import cuda
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not cuda.is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.")
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale = None  # float32 tensor, created lazily by scale()
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer_states = defaultdict(_refresh_state)

    def _lazy_init(self):
        from ..ops.creation import full
        from .._core import dtype as dt
        self._scale = full((), self._init_scale, dtype=dt.float32)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=dt.int32)

    def _check(self, funcname):
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate "
                                 f"your script did not use scaler.scale(loss or outputs) earlier "
                                 f"in the iteration.")

    def scale(self, outputs):
        """Multiplies ('scales') a tensor or an iterable of tensors by the scale factor."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init()
        from .._core.tensor import Tensor

        def go(v):
            if isinstance(v, Tensor):
                return v * self._scale.to(v.device)
            if isinstance(v, (list, tuple)):
                r = [go(x) for x in v]
                return type(v)(r) if isinstance(v, list) else tuple(r)
            if hasattr(v, "__iter__"):
                return map(go, v)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return go(outputs)

    def _unscale_grads(self, optimizer, inv_scale, allow_fp16):
        from ..autograd.grad_mode import no_grad
        from .._core import dtype as dt
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype == dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if not bool(g.isfinite().all()):
                        found = True
                    g.mul_(inv_scale.to(g.dtype) if g.dtype != inv_scale.dtype else inv_scale)
        return found

    def unscale_(self, optimizer):
        """Divides ('unscales') the optimizer's gradient tensors by the scale factor."""
        if not self._enabled:
            return
        self._check("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from .._core import dtype as dt
        inv_scale = self._scale.double().reciprocal().to(dt.float32)
        state["found_inf"] = self._unscale_grads(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients if needed, then runs ``optimizer.step`` unless they hold
        inf or NaN (the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not state["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Updates the scale factor: backoff if any step this iteration saw inf/NaN, growth
        after ``growth_interval`` consecutive clean iterations; or set it to ``new_scale``."""
        if not self._enabled:
            return
        self._check("update")
        if new_scale is not None:
            from .._core.tensor import Tensor
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or not new_scale.is_floating_point() or \
                        new_scale.requires_grad:
                    raise AssertionError("new_scale should be a float or a 1-element "
                                         "torch.FloatTensor with requires_grad=False.")
                self._scale.fill_(float(new_scale.item()))
            else:
                self._scale.fill_(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values()
                     if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            tracker = int(self._growth_tracker.item())
            if any(found):
                self._scale.mul_(self._backoff_factor)
                tracker = 0
            else:
                tracker += 1
                if tracker == self._growth_interval:
                    grown = self._scale * self._growth_factor
                    if bool(grown.isfinite()):
                        self._scale.copy_(grown)
                    tracker = 0
            self._growth_tracker.fill_(tracker)
        self._per_optimizer_states = defaultdict(_refresh_state)

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else \
            int(self._growth_tracker.item())

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """The scaler's state (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
