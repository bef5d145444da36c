"""parallel_apply: run modules on their inputs in parallel threads (``torch.nn.parallel``)."""
import threading

__all__ = ["parallel_apply"]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """Applies each ``modules[i]`` to ``inputs[i]`` (with ``kwargs_tup[i]``) in its own
    thread and returns the outputs in order; an exception in any thread is re-raised."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of inputs {len(inputs)}")
    if kwargs_tup is None:
        kwargs_tup = tuple({} for _ in modules)
    elif len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of kwargs {len(kwargs_tup)}")
    from ...autograd import is_grad_enabled, set_grad_enabled
    grad_enabled = is_grad_enabled()
    results = [None] * len(modules)

    def worker(i, module, inp, kwargs):
        # grad mode is thread-local: carry the caller's into the worker
        with set_grad_enabled(grad_enabled):
            try:
                if not isinstance(inp, (list, tuple)):
                    inp = (inp,)
                results[i] = ("ok", module(*inp, **kwargs))
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                results[i] = ("err", e)

    if len(modules) == 1:
        worker(0, modules[0], inputs[0], kwargs_tup[0])
    else:
        threads = [threading.Thread(target=worker, args=(i, m, x, k))
                   for i, (m, x, k) in enumerate(zip(modules, inputs, kwargs_tup))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    outputs = []
    for kind, val in results:
        if kind == "err":
            raise val
        outputs.append(val)
    return outputs
