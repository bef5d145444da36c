"""``ember._logging`` (``torch._logging``): `set_logs`, the in-process switch of what
ember.compile and ember.export report.

Components take a log level (``logging.DEBUG`` = 10, ``INFO`` = 20, ...): at INFO or
finer, every artifact of the component is on (``dynamic=10``: each size ember makes
symbolic is reported).  Artifacts take a bool: ``recompiles``, ``graph_breaks``,
``output_code``, ``graph_code`` and torch's names for them; torch's other switches are
accepted and have nothing to report in ember.  ``EMBER_LOGS`` (and ``TORCH_LOGS`` under
``ember.compat``) set the same from the environment (``ember._dynamo.logs``).
"""
import logging

from .._dynamo import logs as _logs
from . import _internal  # noqa: F401  (torch._logging._internal)

__all__ = ["set_logs"]

_LEVELS = (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG,
           logging.NOTSET)


def set_logs(*, all=None, dynamo=None, aot=None, autograd=None, dynamic=None, inductor=None,
             distributed=None, c10d=None, ddp=None, fsdp=None, dtensor=None, onnx=None,
             export=None, modules=None, **artifacts):
    """Sets the log level for individual components and toggles individual log artifact
    types; each call replaces the previous settings (``set_logs()`` turns everything
    off).  A component's level must be one of ``logging``'s levels (ValueError
    otherwise); an unknown name is a TypeError, as in torch."""
    components = {"all": all, "dynamo": dynamo, "aot": aot, "autograd": autograd,
                  "dynamic": dynamic, "inductor": inductor, "distributed": distributed,
                  "c10d": c10d, "ddp": ddp, "fsdp": fsdp, "dtensor": dtensor, "onnx": onnx,
                  "export": export}
    for name, level in components.items():
        if level is not None and (type(level) is not int or level not in _LEVELS):
            raise ValueError(f"Unrecognized log level for log {name}: {level}, valid level "
                             f"values are: {','.join(str(x) for x in _LEVELS)}")
    for name, on in artifacts.items():
        if not isinstance(on, bool):
            raise ValueError(f"Unrecognized log level for artifact {name}: {on}, expected a "
                             f"bool")
    if modules:
        for name, level in modules.items():
            logging.getLogger(name).setLevel(level if isinstance(level, int) and
                                             not isinstance(level, bool) else logging.DEBUG)
    silent = {k: v is not None and v <= logging.INFO
              for k, v in components.items() if k not in ("all", "dynamo", "aot", "inductor",
                                                          "dynamic")}
    _logs.set_logs(all=all, dynamo=dynamo, aot=aot, inductor=inductor, dynamic=dynamic,
                   **{k: v for k, v in silent.items() if v}, **artifacts)
