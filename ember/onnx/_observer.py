"""`InputObserver` (torch.onnx.InputObserver): learn export arguments and dynamic shapes from
the inputs a model is really called with."""
import contextlib

import numpy as np

from .._core.tensor import Tensor
from ._program import _ort_session_initializer

__all__ = ["InputObserver"]


def _clone(v):
    if isinstance(v, Tensor):
        return v.detach().clone()
    if isinstance(v, (list, tuple)):
        return type(v)(_clone(x) for x in v)
    if isinstance(v, dict):
        return {k: _clone(x) for k, x in v.items()}
    return v


def _tensors(v, acc):
    if isinstance(v, Tensor):
        acc.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _tensors(x, acc)
    elif isinstance(v, dict):
        for x in v.values():
            _tensors(x, acc)
    return acc


class InputObserver:
    """Steals a model's forward method to collect the inputs and outputs of its calls; they
    give the arguments and dynamic shapes to export it with.

    ``value_if_missing``: values for keyword arguments some calls do not pass (by name), used
    when the arguments of such a call are chosen.  Example::

        observer = InputObserver()
        with observer(model):
            model(x1, y1)
            model(x2, y2)
        program = ember.onnx.export(model, observer.infer_arguments(),
                                    dynamic_shapes=observer.infer_dynamic_shapes())
    """

    def __init__(self, value_if_missing=None):
        self.value_if_missing = dict(value_if_missing or {})
        self.inputs = []    # (args, kwargs) of each observed call, cloned
        self.outputs = []   # its outputs, cloned

    def __call__(self, model, store_n_calls=3, method_name="forward"):
        """A context manager that records the first ``store_n_calls`` calls of
        ``model.<method_name>``; the method is restored when it exits."""
        return self._observe(model, store_n_calls, method_name)

    @contextlib.contextmanager
    def _observe(self, model, store_n_calls, method_name):
        original = getattr(model, method_name)
        had_own = method_name in vars(model)

        def spy(*args, **kwargs):
            out = original(*args, **kwargs)
            if len(self.inputs) < store_n_calls:
                self.inputs.append((_clone(tuple(args)), _clone(dict(kwargs))))
                self.outputs.append(_clone(out))
            return out

        setattr(model, method_name, spy)
        try:
            yield self
        finally:
            if had_own:
                setattr(model, method_name, original)
            else:
                delattr(model, method_name)

    def num_obs(self):
        """Returns the number of stored sets of inputs."""
        return len(self.inputs)

    def _check_captured(self):
        if not self.inputs:
            raise RuntimeError("InputObserver: no call was observed; call the model inside "
                               "`with observer(model):` first")

    def infer_arguments(self, index_or_args_or_kwargs=None, flat=False, as_args_kwargs=False):
        """The arguments to export with: the observed call with the most tensors (or the
        call number ``index_or_args_or_kwargs``, or those arguments themselves), keyword
        arguments it lacks filled from ``value_if_missing``.  ``flat``: the list of its
        tensors; ``as_args_kwargs``: always ``(args, kwargs)``, else a tuple (positional
        only) or a dict (keywords only)."""
        if isinstance(index_or_args_or_kwargs, (tuple, dict)):
            args, kwargs = (index_or_args_or_kwargs, {}) if isinstance(
                index_or_args_or_kwargs, tuple) else ((), index_or_args_or_kwargs)
        else:
            self._check_captured()
            i = index_or_args_or_kwargs
            if i is None:
                i = max(range(len(self.inputs)), key=lambda k: len(_tensors(self.inputs[k], [])))
            args, kwargs = self.inputs[i]
            names = [k for _, kw in self.inputs for k in kw]
            kwargs = dict(kwargs)
            for k in dict.fromkeys(names):
                if k not in kwargs and k in self.value_if_missing:
                    kwargs[k] = self.value_if_missing[k]
        if flat:
            return _tensors((args, kwargs), [])
        if as_args_kwargs:
            return tuple(args), kwargs
        if kwargs and args:
            raise ValueError("InputObserver.infer_arguments: the calls take positional and "
                             "keyword arguments; use as_args_kwargs=True")
        return kwargs if kwargs else tuple(args)

    def infer_dynamic_shapes(self, set_batch_dimension_for=None):
        """Dynamic shapes for `infer_arguments`'s arguments (torch.export's form, ``{dim:
        Dim.DYNAMIC}`` per tensor argument, None for the static ones): the dims whose size
        differs between the observed calls, and dim 0 of the arguments in
        ``set_batch_dimension_for`` (positions or names; True: every argument)."""
        from ..export import Dim
        self._check_captured()
        args, kwargs = self.infer_arguments(as_args_kwargs=True)
        batch = set_batch_dimension_for

        def spec(key, value):
            if not isinstance(value, Tensor):
                return None
            dims = set()
            for a, kw in self.inputs:
                other = a[key] if isinstance(key, int) and key < len(a) else kw.get(key)
                if isinstance(other, Tensor) and other.dim() == value.dim():
                    dims |= {d for d in range(value.dim()) if other.shape[d] != value.shape[d]}
            if value.dim() and (batch is True or (batch and key in batch)):
                dims.add(0)
            return {d: Dim.DYNAMIC for d in sorted(dims)} or None

        if kwargs and not args:
            return {k: spec(k, v) for k, v in kwargs.items()}
        out = tuple(spec(i, v) for i, v in enumerate(args))
        if kwargs:
            return out + tuple(spec(k, v) for k, v in kwargs.items())
        return out

    def check_discrepancies(self, onnx_program, atol=0.0001, rtol=0.1, progress_bar=False,
                            initializer=_ort_session_initializer, skip_none=True):
        """Run ``onnx_program`` on every observed call's tensors and compare with the outputs
        the model gave: one dict per call (``index``, ``SUCCESS``, ``abs``, ``rel``,
        ``n_outputs``, and ``error`` when it could not run)."""
        self._check_captured()
        onnx_program.initialize_inference_session(initializer)
        rows = []
        calls = range(len(self.inputs))
        if progress_bar:
            from tqdm import tqdm
            calls = tqdm(calls)
        for i in calls:
            row = {"index": i}
            want = [t for t in _tensors(self.outputs[i], [])]
            try:
                got = onnx_program(*_tensors(self.inputs[i], []))
            except Exception as e:  # noqa: BLE001 - reported in the row
                row.update(SUCCESS=False, error=f"{type(e).__name__}: {e}")
                rows.append(row)
                continue
            abs_err = rel_err = 0.0
            ok = len(got) == len(want)
            for g, w in zip(got, want):
                g, w = g.numpy(), w.numpy()
                if g.shape != w.shape:
                    ok = False
                    continue
                if w.size:
                    d = np.abs(g.astype(np.float64) - w.astype(np.float64))
                    abs_err = max(abs_err, float(d.max()))
                    rel_err = max(rel_err, float((d / (np.abs(w) + 1e-12)).max()))
                    ok = ok and bool(np.allclose(g, w, atol=atol, rtol=rtol, equal_nan=True))
            row.update(SUCCESS=ok, abs=abs_err, rel=rel_err, n_outputs=len(got))
            rows.append(row)
        return rows
