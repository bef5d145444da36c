"""Exception types of ``ember.distributed`` (torch.distributed's names)."""

__all__ = ["DistError", "DistBackendError", "DistStoreError", "DistNetworkError"]


class DistError(RuntimeError):
    """Raised when an error occurs in the distributed library."""


class DistBackendError(DistError):
    """Raised when a backend error occurs: a collective or receive that timed out, a
    rank that is missing, or an MPI failure."""


class DistStoreError(DistError):
    """Raised when an error occurs in the distributed store (timeouts included)."""


class DistNetworkError(DistError):
    """Raised when a network error occurs in the distributed library."""
