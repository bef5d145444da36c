"""``torch._logging._internal``: the log formatter and the environment reading behind
`set_logs` (what programs reach for to reset logging, e.g. torch's tutorials).

``DEFAULT_FORMATTER`` formats ember.compile/export's log lines; assigning another
formatter and calling `_init_logs` installs it.  ``TORCH_LOGS_FORMAT`` (a `logging`
format string; empty for the bare message) chooses `_default_formatter`'s format.
"""
import logging
import os

from .._dynamo import logs as _logs

__all__ = ["DEFAULT_FORMATTER", "_default_formatter", "_init_logs", "set_logs"]


def _default_formatter():
    """The formatter of the log lines: ``TORCH_LOGS_FORMAT`` if set (``""`` for the bare
    message), else ember's ``[ember.compile] [__artifact] message``."""
    fmt = os.environ.get("TORCH_LOGS_FORMAT")
    if fmt is None:
        return logging.Formatter("[ember.compile] [__%(artifact)s] %(message)s")
    return logging.Formatter(fmt or "%(message)s")


DEFAULT_FORMATTER = _default_formatter()


def _init_logs(log_file_name=None):
    """Install ``DEFAULT_FORMATTER`` on the log handler and read the environment again
    (``TORCH_LOGS``/``EMBER_LOGS``); ``log_file_name`` adds a file handler."""
    _logs._HANDLER.setFormatter(DEFAULT_FORMATTER)
    _logs._ENV.clear()
    if log_file_name is not None:
        handler = logging.FileHandler(log_file_name)
        handler.setFormatter(DEFAULT_FORMATTER)
        _logs._LOGGER.addHandler(handler)


def set_logs(**kwargs):
    from . import set_logs as _set_logs
    return _set_logs(**kwargs)
