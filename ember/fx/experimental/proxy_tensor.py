"""``torch.fx.experimental.proxy_tensor``: ``get_proxy_mode``, which libraries ask before
branching on a tensor's values (kornia). ember traces programs with its own recorder, not
a proxy dispatch mode, so none is ever active."""

__all__ = ["get_proxy_mode"]


def get_proxy_mode():
    """The active proxy-tensor tracing mode: None (ember has no make_fx dispatch mode)."""
    return None
