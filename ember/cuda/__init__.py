"""``torch.cuda``: the queries device-agnostic scripts make.

A 'cuda' device exists when a backend named 'cuda' is registered (CuPy); without
one, ember answers as a CPU-only build of PyTorch: ``is_available()`` is False, seeding
and ``empty_cache`` are no-ops, and calls that need the device (``synchronize``,
``current_device``) raise its AssertionError.
"""
from .._core import device as _device

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all", "synchronize",
           "empty_cache", "current_device", "is_bf16_supported", "is_initialized", "init",
           "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state",
           "get_rng_state_all", "set_rng_state_all", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "memory_stats", "Stream", "Event",
           "current_stream", "default_stream", "stream"]

# torch.cuda's module flag, read directly by libraries (performer-pytorch's reversible
# layers decide whether to save CUDA RNG states): set once the device is first used
_initialized = False


def is_available():
    """True if a 'cuda' backend is registered."""
    return "cuda" in _device._BACKENDS


def device_count():
    return 1 if is_available() else 0


def _lazy_init():
    global _initialized
    if not is_available():
        raise AssertionError("Torch not compiled with CUDA enabled")
    _initialized = True


def is_initialized():
    return _initialized


init = _lazy_init


def current_device():
    _lazy_init()
    return 0


def manual_seed(seed):
    """Seeds the CUDA generator; ember's generators are shared, so this is a no-op."""


manual_seed_all = manual_seed


def seed():
    """Seeds the CUDA generator randomly; a no-op without a device, as in torch."""


seed_all = seed


def initial_seed():
    _lazy_init()
    from .. import random
    return random.initial_seed()


def get_rng_state(device="cuda"):
    _lazy_init()
    from .. import random
    return random.get_rng_state()


def set_rng_state(new_state, device="cuda"):
    _lazy_init()
    from .. import random
    random.set_rng_state(new_state)


def get_rng_state_all():
    """One state per device: an empty list without a device."""
    return [get_rng_state()] if is_available() else []


def set_rng_state_all(new_states):
    for state in new_states:
        set_rng_state(state)


def memory_stats(device=None):
    """The caching allocator's counters; ember has no allocator to report, so an empty
    mapping, as torch answers before CUDA is initialised."""
    import collections
    return collections.OrderedDict()


def memory_allocated(device=None):
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def synchronize(device=None):
    """ember's kernels complete before returning; nothing to wait for."""
    _lazy_init()


def empty_cache():
    """No caching allocator to release."""


def is_bf16_supported(including_emulation=True):
    return is_available()


class Stream:
    """A CUDA stream (``torch.cuda.Stream``).  ember's device kernels complete before they
    return, so every stream is already in order: waiting and synchronizing have nothing to
    wait for.  Without a 'cuda' backend constructing one raises torch's CPU-build error."""

    def __init__(self, device=None, priority=0, **kwargs):
        if not is_available():
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        self.device = _device.device("cuda", 0)
        self.priority = priority

    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self):
        return True

    def synchronize(self):
        pass

    def __eq__(self, other):
        return isinstance(other, Stream)

    __hash__ = object.__hash__


class Event:
    """A CUDA event (``torch.cuda.Event``): records when the work before it finished, which
    on ember's synchronous device is when ``record`` is called."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if not is_available():
            raise RuntimeError("Tried to instantiate dummy base class Event")
        self.enable_timing = enable_timing
        self._time = None

    def record(self, stream=None):
        import time
        self._time = time.perf_counter()

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def synchronize(self):
        pass

    def elapsed_time(self, end_event):
        """Milliseconds between this event's record and ``end_event``'s."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


def current_stream(device=None):
    _lazy_init()
    return Stream()


default_stream = current_stream


class stream:
    """Context manager selecting a stream (``torch.cuda.stream``); ``None`` selects
    nothing, as torch's."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


from . import amp  # noqa: E402,F401  (torch.cuda.amp)
