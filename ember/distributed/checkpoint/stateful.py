"""The `Stateful` protocol: objects saved through their ``state_dict``/``load_state_dict``."""
from typing import Any, Dict, Protocol, runtime_checkable

__all__ = ["Stateful"]


@runtime_checkable
class Stateful(Protocol):
    """Anything with ``state_dict()`` and ``load_state_dict(state_dict)`` (modules,
    optimizers, your own classes): `save` stores what ``state_dict()`` returns, `load` fills
    that structure and hands it back to ``load_state_dict``."""

    def state_dict(self) -> Dict[str, Any]:
        ...

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        ...
