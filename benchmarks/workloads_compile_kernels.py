"""Workloads of the inductor backend's generated kernels: ember's compiled graph (recorded
op by op and compiled with ``ember._inductor.compile_fx``, until ember.compile captures it)
against torch.compile of the same function.  Both sides time the compiled call only."""
from .workloads import _arr, workload


def _compiled(lib, fn, *inputs):
    if lib.__name__ == "torch":
        c = lib.compile(fn)
        return lambda: c(*inputs)
    from ember._inductor import compile_fx
    from ember._inductor.passes.record import record_graph
    gm, _ = record_graph(fn, *inputs)
    c = compile_fx(gm, list(inputs))
    return lambda: c(*inputs)


@workload("compiled_pointwise_chain_4M", "compile_kernels")
def pointwise_chain_4m(lib):
    x = _arr(lib, (4 * 1024 * 1024,))
    F = lib.nn.functional
    return _compiled(lib, lambda x: F.gelu(x) * lib.sigmoid(x) + x, x)


@workload("compiled_softmax_256x1024", "compile_kernels")
def softmax_256x1024(lib):
    x = _arr(lib, (256, 1024))
    return _compiled(lib, lambda x: lib.softmax(x, -1), x)


@workload("compiled_layer_norm_256x1024", "compile_kernels")
def layer_norm_256x1024(lib):
    x, w, b = _arr(lib, (256, 1024)), _arr(lib, (1024,), 1), _arr(lib, (1024,), 2)
    F = lib.nn.functional
    return _compiled(lib, lambda x, w, b: F.layer_norm(x, (1024,), w, b), x, w, b)


@workload("compiled_small_graph_overhead", "compile_kernels")
def small_graph(lib):
    x = _arr(lib, (16,))
    return _compiled(lib, lambda x: x * 2 + 1, x)


@workload("compiled_lenet_train_step", "compile_kernels")
def lenet_train_step(lib):
    """workloads_nn's lenet_train_step with the model compiled (forward and backward
    graphs; loss, backward driver and SGD eager), for ember's inductor and torch.compile."""
    from .workloads_nn import lenet_train_step as eager_step
    return eager_step(lib, compile_model=True)
