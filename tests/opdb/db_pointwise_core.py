"""A first handful of pointwise entries (more live in db_pointwise.py)."""
from .core import FLOATS, INTS, OpInfo, binary_samples, unary_samples

OPS = [
    OpInfo("exp", samples=unary_samples(), dtypes=FLOATS + INTS + ("float16", "bfloat16")),
    OpInfo("sin", samples=unary_samples(), dtypes=FLOATS + INTS),
    OpInfo("mul", samples=binary_samples(), dtypes=FLOATS + INTS + ("bool",)),
]
