"""Values read from input tensors during export: unbacked symbols (torch's ``u0``).

``x.item()`` or ``x.tolist()`` on an input of an exported program (a user input, a
parameter or a buffer) cannot give the example's value: the program would bake it in and
give wrong answers for other inputs.  Instead each integer read is a `SymInt` leaf
``("u", k, 0)``, ``u0, u1, ...`` in the graph, computed at run time from the input by an
``item_at`` node.  Comparisons the program makes of it are guards like those of sizes
(`ember.export.guards`): ``ember._check(a >= 0)`` states an assumption that narrows its
range; a comparison that does not hold over the whole range becomes a runtime assertion
of the program (``assert_size`` nodes), so no call gives a silently wrong answer.
Floating-point and bool values read this way are errors naming the read.
"""
from .._core import checks as _checks
from .._core import tensor as _tensor

from .._dynamo import symbolic
from .._dynamo.exc import UserError
from .._dynamo.session import user_location

__all__ = ["UnbackedValues"]


class UnbackedValues:
    """The value reads of one capture: ``sources[k] = (tensor, flat index)`` of ``u{k}``."""

    def __init__(self, session, inputs, leaf_specs, dim_spec):
        self.session = session
        self.inputs = inputs          # id -> tensor: the tensors a read of gives symbols
        self.leaf_specs = leaf_specs
        self.dim_spec = dim_spec
        self.sources = {}

    def _read(self, t, kind):
        if id(t) not in self.inputs or "_lazy" in t.__dict__:
            return NotImplemented
        dt = t.dtype
        if dt.is_floating_point or dt.is_complex or str(dt) == "ember.bool":
            raise UserError(
                f"ember.export cannot capture a Python read of the {dt} values of an input "
                f"({kind}()): the program would bake the example's value in. Only integer "
                f"values become symbols; keep the computation in tensors (e.g. use the tensor "
                f"itself, or ember.cond on it)\n  at {user_location()}")
        values = t.detach().numpy().reshape(-1).tolist()
        syms = [self._symbol(t, i, int(v)) for i, v in enumerate(values)]
        if kind == "item":
            return syms[0]
        import numpy as np
        return np.array(syms, dtype=object).reshape(tuple(t.shape)).tolist() \
            if t.ndim else syms[0]

    def _symbol(self, t, index, value):
        k = len(self.sources)
        leaf = ("u", k, 0)
        self.sources[k] = (t, index)
        self.session.leaf_values[leaf] = value
        self.session.cache.dynamic_leaves.add(leaf)
        self.leaf_specs[leaf] = self.dim_spec()
        return symbolic.SymInt(value, leaf)

    def _assume(self):
        guards = symbolic.GUARDS[-1] if symbolic.GUARDS else None
        if guards:
            op, lhs, rhs, result = guards[-1][:4]
            guards[-1] = (op, lhs, rhs, result, True)

    def __enter__(self):
        _tensor.VALUE_HOOKS.append(self._read)
        _checks.CHECK_HOOKS.append(self._assume)
        return self

    def __exit__(self, *exc):
        _tensor.VALUE_HOOKS.remove(self._read)
        _checks.CHECK_HOOKS.remove(self._assume)



