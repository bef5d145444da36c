"""Fuzzer: random parameters and tensors (sizes, strides, layouts) for sweeping an op."""
import functools
import itertools
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

from ..._core import dtype as _dt

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """Specification for a parameter to be generated during fuzzing.

    ``distribution`` is ``"uniform"`` (integers when both bounds are ints,
    otherwise continuous), ``"loguniform"`` (uniform in log space, integer
    valued) or a dict ``{value: probability}`` (then ``minval``/``maxval``
    must be None). A ``strict`` parameter keeps its first sample while the
    Fuzzer resamples the others to satisfy constraints.
    """

    def __init__(self, name: str, minval=None, maxval=None,
                 distribution: Union[str, Dict[Any, float], None] = None,
                 strict: bool = False) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            if self._minval is None or self._maxval is None:
                raise AssertionError(f"'{distribution}' needs both 'minval' and 'maxval'")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def sample(self, state: np.random.RandomState):
        if self._distribution == "loguniform":
            out = int(2 ** state.uniform(low=np.log2(self._minval), high=np.log2(self._maxval)))
            return min(max(out, self._minval), self._maxval)
        if self._distribution == "uniform":
            if isinstance(self._minval, int) and isinstance(self._maxval, int):
                return int(state.randint(low=self._minval, high=self._maxval + 1))
            return state.uniform(low=self._minval, high=self._maxval)
        # choose an index, not the key itself: numpy would turn keys into numpy scalars
        keys = list(self._distribution)
        return keys[state.choice(np.arange(len(keys)), p=tuple(self._distribution.values()))]


class ParameterAlias:
    """A parameter value that takes the value of another parameter.

    With a custom distribution this makes e.g. broadcasting sizes:
    ``FuzzedParameter("y_len", distribution={1: 0.5, ParameterAlias("x_len"): 0.5})``.
    Chains of aliases are allowed; cycles are an error.
    """

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype) -> int:
    if dtype == _dt.bool:
        return 1
    if dtype.is_floating_point or dtype.is_complex:
        return _dt.finfo(dtype).bits // 8
    return _dt.iinfo(dtype).bits // 8


def prod(values, base=1) -> int:
    """Product in Python ints: np.prod could overflow into a negative size."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


def _default_dtype():
    return _dt.float32


class FuzzedTensor:
    """Specification of a tensor generated from the Fuzzer's parameters.

    ``size`` and ``steps`` hold ints or parameter names; a tensor of size
    ``size * steps`` is allocated and sliced with ``steps`` (strided memory).
    With probability ``1 - probability_contiguous`` the memory order is a
    random permutation of the dims. ``min_elements``, ``max_elements`` and
    ``max_allocation_bytes`` reject parameter sets; ``dim_parameter`` truncates
    (or pads with 1s) size and steps to that many dims; ``roll_parameter``
    rotates size and steps by that many places. ``tensor_constructor(size=,
    dtype=, **params)`` replaces the default (``rand`` for floating/complex,
    ``randint(1, 127)`` otherwise).
    """

    def __init__(self, name: str, size, steps=None, probability_contiguous: float = 0.5,
                 min_elements: Optional[int] = None, max_elements: Optional[int] = None,
                 max_allocation_bytes: Optional[int] = None, dim_parameter: Optional[str] = None,
                 roll_parameter: Optional[str] = None, dtype=None, cuda: bool = False,
                 tensor_constructor: Optional[Callable] = None) -> None:
        self._name = name
        self._size = tuple(size)
        self._steps = tuple(steps) if steps is not None else None
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._roll_parameter = roll_parameter
        self._dtype = dtype if dtype is not None else _default_dtype()
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        from ...ops.random import rand, randint
        if dtype.is_floating_point or dtype.is_complex:
            return rand(tuple(size), dtype=dtype, device="cpu")
        return randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params, state):
        size, steps, allocation = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()

        # lay the memory out in a random dim order, keeping the logical shape
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(int(i) for i in order)).contiguous()
            raw = raw.permute(tuple(int(i) for i in np.argsort(order)))

        tensor = raw[tuple(slice(0, n * s, s) for n, s in zip(size, steps))]
        properties = {
            "numel": int(tensor.numel()),
            "order": order,
            "steps": steps,
            "is_contiguous": tensor.is_contiguous(),
            "dtype": str(self._dtype),
        }
        return tensor, properties

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size, steps = resolve(self._size), resolve(self._steps or ())
        if self._roll_parameter is not None and dim:
            shift = int(params[self._roll_parameter]) % dim
            size = size[-shift:] + size[:-shift] if shift else size
            steps = steps[-shift:] + steps[:-shift] if shift else steps
        allocation = tuple(n * s for n, s in zip(size, steps))
        return size, steps, allocation

    def satisfies_constraints(self, params) -> bool:
        size, _, allocation = self._get_size_and_steps(params)
        numel = prod(size)
        if numel < 0:
            raise AssertionError("Computed number of elements is negative")
        nbytes = prod(allocation, base=dtype_size(self._dtype))

        def greater(a, b):
            return a is not None and b is not None and a > b

        return not (greater(numel, self._max_elements) or greater(self._min_elements, numel)
                    or greater(nbytes, self._max_allocation_bytes))


class Fuzzer:
    """Draws parameter sets (resampling until ``constraints`` and every tensor's
    limits hold) and builds the tensors for each; reproducible by ``seed``,
    which also seeds ember's RNG so tensor values repeat too.

    ``parameters`` / ``tensors`` are lists whose elements may themselves be
    lists (one level is unpacked). ``constraints`` are callables taking the
    parameters as a dict and returning False to reject them.
    """

    def __init__(self, parameters: List, tensors: List,
                 constraints: Optional[List[Callable]] = None,
                 seed: Optional[int] = None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = self._unpack(parameters, FuzzedParameter)
        self._tensors = self._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v
                                                   for v in values))

    def take(self, n: int):
        """Yield ``n`` triples ``(tensors, tensor_properties, params)``."""
        from ..._core.random import manual_seed
        state = np.random.RandomState(self._seed)
        manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state):
        strict: Dict[str, Any] = {}
        for _ in range(1000):
            candidate = {}
            for p in self._parameters:
                if p.strict:
                    if p.name not in strict:
                        strict[p.name] = p.sample(state)
                    candidate[p.name] = strict[p.name]
                else:
                    candidate[p.name] = p.sample(state)
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) or \
                    not all(t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k, v in list(params.items()):
                if isinstance(v, ParameterAlias):
                    params[k] = params[v.alias_to]
            now = sum(isinstance(v, ParameterAlias) for v in params.values())
            if now == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = now
        return params
