"""What ember.compile reports, switched on by ``EMBER_LOGS`` (``TORCH_LOGS`` too).

``EMBER_LOGS="recompiles,graph_breaks,output_code"`` (comma-separated; ``+dynamo`` or
``all`` for everything): ``recompiles`` explains each recompile in one line,
``graph_breaks`` each graph break with the user's file:line, ``output_code`` prints what
the backend generated, ``graph_code`` the captured graphs.  `set_logs` does the same from
Python (``torch._logging.set_logs``).
"""
import logging
import os
import sys

__all__ = ["enabled", "set_logs", "log", "ARTIFACTS"]

ARTIFACTS = ("recompiles", "graph_breaks", "output_code", "graph_code", "guards", "dynamic")
_ON = set()
_LOGGER = logging.getLogger("ember._dynamo")


def _parse(text):
    out = set()
    for part in (text or "").replace(" ", "").split(","):
        part = part.lstrip("+")
        if part in ("all", "dynamo", "inductor"):
            out.update(ARTIFACTS)
        elif part in ARTIFACTS:
            out.add(part)
    return out


def _from_env():
    _ON.clear()
    _ON.update(_parse(os.environ.get("TORCH_LOGS")))
    _ON.update(_parse(os.environ.get("EMBER_LOGS")))


def enabled(artifact):
    return artifact in _ON


def set_logs(**artifacts):
    """Switch artifacts on or off: ``set_logs(recompiles=True, graph_breaks=True)``."""
    for name, on in artifacts.items():
        if name not in ARTIFACTS:
            raise ValueError(f"unknown log artifact {name!r}; the artifacts are {list(ARTIFACTS)}")
        (_ON.add if on else _ON.discard)(name)


def log(artifact, message):
    """Emit ``message`` under ``artifact`` if it is on (to stderr, through logging)."""
    if artifact not in _ON:
        return
    if not _LOGGER.handlers and not logging.getLogger().handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("[ember.compile] [%(name)s] %(message)s"))
        _LOGGER.addHandler(h)
        _LOGGER.setLevel(logging.INFO)
        _LOGGER.propagate = False
    _LOGGER.info("[__%s] %s", artifact, message)


_from_env()
