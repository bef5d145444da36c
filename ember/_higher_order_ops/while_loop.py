"""``torch._higher_order_ops.while_loop.while_loop``: see `ember._dynamo.control_flow`."""
from .._dynamo.control_flow import while_loop

__all__ = ["while_loop"]
