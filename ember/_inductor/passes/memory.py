"""Pass 4, plan memory: a kernel's output buffer takes the memory of a dead buffer of the
same dtype and element count instead of allocating, and the wrapper drops each buffer
after its last reader.

A buffer is dead only when nothing can still see its memory: an eager step may return a
view of its input (permute, slice, a reshape NumPy does without copying), so a buffer and
every eager output that may alias it form one alias group; its memory is free after the
group's last reader, and never while a member is a graph output (a saved view the
backward reads later).  Buffers made by eager steps are never recycled themselves."""
from .. import ir
from .. import sizes as _sizes

__all__ = ["plan_memory", "may_alias_inputs"]

# ops whose eager kernels return fresh arrays: elementwise ufuncs, library calls (BLAS,
# sort, LAPACK, FFT) and loops that build a new array; movement ops, casts (real/imag,
# a same-dtype _to_copy), identities, getitem and composites run eagerly may not
_FRESH_KINDS = frozenset({"scalar", "extern"})
_FRESH_LOOPS = frozenset({"reduction", "scan", "gather", "scatter", "creation", "rng"})


def may_alias_inputs(node):
    """Whether an eager step running ``node`` may return memory of one of its inputs."""
    op = node.target
    lowering = getattr(op, "lowering", None)
    if lowering is None or getattr(op, "view", False):
        return True
    if lowering.kind == "loop":
        return lowering.detail not in _FRESH_LOOPS
    return lowering.kind not in _FRESH_KINDS


def _reads(step):
    if isinstance(step, ir.KernelStep):
        return step.kernel.buffers_read()
    return ["b_" + a.name for a in step.node.all_input_nodes]


def _alias_groups(sched):
    """``{buffer: root}``: buffers that may share memory through eager views share a root."""
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for st in sched.steps:
        if not isinstance(st, ir.EagerStep) or not may_alias_inputs(st.node):
            continue
        # a multi-output node has no buffer of its own: its getitems read "b_<node>",
        # which links them to the node's inputs all the same
        for r in _reads(st):
            parent[find("b_" + st.node.name)] = find(r)
    return find


def plan_memory(sched):
    """Sets ``Buffer.reuses`` and returns ``{step index: [buffers dead after it]}``."""
    last = {}
    for i, st in enumerate(sched.steps):
        for r in _reads(st):
            last[r] = i
    outputs = {o for o in sched.outputs if isinstance(o, str)}
    root = _alias_groups(sched)
    group_last, pinned = {}, set()  # last read of any alias; groups an output keeps alive
    for name, li in last.items():
        r = root(name)
        group_last[r] = max(group_last.get(r, -1), li)
    for o in outputs:
        pinned.add(root(o))
    kernel_made = _kernel_made(sched)
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
            dead_after.setdefault(i, []).append(name)
        # memory is free once the last reader of its whole alias group has run
        for name in kernel_made:
            r = root(name)
            b = sched.buffers[name]
            if group_last.get(r) == i and r not in pinned and b.kind == "temp" \
                    and name not in outputs:
                free.append(((b.dtype.name, _sizes.key(_sizes.prod(b.shape))), name))
    return dead_after


def _kernel_made(sched):
    """Buffers kernels write, in the order they are first written."""
    out = {}
    for st in sched.steps:
        if isinstance(st, ir.KernelStep):
            for s in st.kernel.stores:
                out.setdefault(s.buf, None)
    return list(out)
