"""Pass 4, plan memory: a kernel's output buffer takes the memory of a dead buffer of the
same dtype and element count instead of allocating (buffers made by eager steps may be
views of others and are never recycled), and the wrapper drops each buffer after its
last reader."""
from .. import ir
from .. import sizes as _sizes

__all__ = ["plan_memory"]


def _reads(step):
    if isinstance(step, ir.KernelStep):
        return step.kernel.buffers_read()
    return ["b_" + a.name for a in step.node.all_input_nodes]


def plan_memory(sched):
    """Sets ``Buffer.reuses`` and returns ``{step index: [buffers dead after it]}``."""
    last = {}
    for i, st in enumerate(sched.steps):
        for r in _reads(st):
            last[r] = i
    outputs = {o for o in sched.outputs if isinstance(o, str)}
    free = []  # buffers whose memory may be taken: (key, name)
    dead_after = {}
    for i, st in enumerate(sched.steps):
        if isinstance(st, ir.KernelStep):
            for s in st.kernel.stores:
                b = sched.buffers[s.buf]
                if b.kind != "temp" or b.reuses is not None:
                    continue
                key = (b.dtype.name, _sizes.key(_sizes.prod(b.shape)))
                for j, (k, name) in enumerate(free):
                    if k == key and name != s.buf:
                        b.reuses = name
                        free.pop(j)
                        break
        for name, li in last.items():
            if li != i or name in outputs or name not in sched.buffers:
                continue
            b = sched.buffers[name]
            dead_after.setdefault(i, []).append(name)
            if b.kind == "temp" and _defined_by_kernel(sched, name):
                free.append(((b.dtype.name, _sizes.key(_sizes.prod(b.shape))), name))
    return dead_after


def _defined_by_kernel(sched, name):
    return any(isinstance(st, ir.KernelStep) and any(s.buf == name for s in st.kernel.stores)
               for st in sched.steps)
