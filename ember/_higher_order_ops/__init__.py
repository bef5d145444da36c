"""torch's higher-order control-flow operators under their torch import paths
(``torch._higher_order_ops.cond.cond``, ``.while_loop.while_loop``, ``.map.map``).

They are `ember.cond`, `ember.while_loop` and `ember.map` (`ember._dynamo.control_flow`):
plain Python eagerly, one graph node with the functions as sub-graphs under
``ember.compile`` and ``ember.export``.
"""
from .cond import cond
from .map import map
from .while_loop import while_loop

__all__ = ["cond", "map", "while_loop"]
