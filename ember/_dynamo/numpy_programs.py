"""Compiling NumPy programs: placeholder until the helper writing it lands."""


def run_numpy_program(compiled, args, kwargs, explain=None):
    return compiled.fn(*args, **kwargs)
