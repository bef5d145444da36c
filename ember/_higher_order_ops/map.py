"""``torch._higher_order_ops.map.map``: see `ember._dynamo.control_flow`."""
from .._dynamo.control_flow import map

__all__ = ["map"]
