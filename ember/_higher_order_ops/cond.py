"""``torch._higher_order_ops.cond.cond``: see `ember._dynamo.control_flow`."""
from .._dynamo.control_flow import cond

__all__ = ["cond"]
