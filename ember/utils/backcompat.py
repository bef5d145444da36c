"""``torch.utils.backcompat``: switches for warnings about semantics that changed long ago
(broadcasting, ``keepdim``).  ember never had the old semantics, so they only record the
setting programs make."""

__all__ = ["Warning", "broadcast_warning", "keepdim_warning"]


class Warning:
    """An on/off switch: ``setter(bool)`` and ``getter()`` hold its state; ``enabled`` is
    the property form."""

    def __init__(self, setter, getter):
        self.setter = setter
        self.getter = getter

    def set_enabled(self, value):
        self.setter(bool(value))

    def get_enabled(self):
        return self.getter()

    enabled = property(get_enabled, set_enabled)


def _switch():
    state = [False]
    return Warning(lambda v: state.__setitem__(0, v), lambda: state[0])


broadcast_warning = _switch()
keepdim_warning = _switch()
