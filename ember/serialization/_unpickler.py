"""The weights-only unpickler: a pickle interpreter that can only build data.

``pickle.Unpickler`` trusts the file to name the callables it runs.  This
interpreter executes the opcodes itself, so every effect of a file is one of:
pushing a plain value (numbers, strings, bytes, tuples, lists, dicts, sets),
calling one of the *allowed globals* (ember's rebuild functions and bounded
stand-ins for a few builtins, see ``_globals``), or building an allowlisted
class.  Every opcode consumes input, and every allowed callable's result is
bounded by its arguments, so memory is bounded by the size of the pickle plus the
storages the archive really holds.  Protocols 0-5 are read, except the opcodes
that import or instantiate arbitrary classes (INST, OBJ, EXT*) and out-of-band
buffers.  Errors are ``pickle.UnpicklingError`` naming the opcode and position.
"""
import collections
import pickle
import struct
import sys
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING

_unpack = struct.unpack
_MAX_MEMO_INDEX = 1 << 32
_DEFAULT_BUDGET = 64 << 20
# approximate CPython sizes of what one opcode can create
_SET_COST, _DICT_COST, _LIST_COST, _TUPLE_COST, _MEMO_COST, _CALL_COST = \
    216, 64, 56, 48, 104, 512


class _Mark:
    __slots__ = ()


class _Stop(Exception):
    pass


class WeightsUnpickler:
    """Reads one pickle from ``file`` (a binary file with ``read``/``readline``).

    ``globals_`` resolves a ``(module, name)`` pair to a value or raises
    ``UnpicklingError``; ``callables`` is the set of values REDUCE may call;
    ``classes`` the set NEWOBJ may instantiate and BUILD may update;
    ``persistent_load(pid)`` turns a persistent id into a storage.
    """

    def __init__(self, file, *, resolve_global, is_callable, is_class, persistent_load,
                 encoding="utf-8", budget=None):
        self._read = file.read
        self._readline = file.readline
        self._tell = getattr(file, "tell", lambda: -1)
        self.resolve_global = resolve_global
        self.is_callable = is_callable
        self.is_class = is_class
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.memo = {}
        self.proto = 0
        # bytes of Python objects the pickle may still create beyond the data it spells out:
        # containers and memo entries cost far more memory than the opcode that makes them
        self.budget = _DEFAULT_BUDGET if budget is None else budget

    def charge(self, nbytes):
        self.budget -= nbytes
        if self.budget < 0:
            raise pickle.UnpicklingError(
                "the pickle creates far more objects than its size accounts for (a "
                "decompression-bomb pattern); refusing to go on")

    # ---- helpers --------------------------------------------------------------------------
    def read(self, n):
        data = self._read(n)
        if len(data) != n:
            raise pickle.UnpicklingError("pickle data was truncated")
        return data

    def readline(self):
        line = self._readline()
        if not line.endswith(b"\n"):
            raise pickle.UnpicklingError("pickle data was truncated")
        return line[:-1]

    def pop_mark(self):
        stack = self.stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is _MARK:
                items = stack[i + 1:]
                del stack[i:]
                return items
        raise pickle.UnpicklingError("could not find MARK")

    def pop(self):
        if not self.stack:
            raise pickle.UnpicklingError("unpickling stack underflow")
        value = self.stack.pop()
        if value is _MARK:
            raise pickle.UnpicklingError("unexpected MARK")
        return value

    def top(self):
        if not self.stack or self.stack[-1] is _MARK:
            raise pickle.UnpicklingError("unpickling stack underflow")
        return self.stack[-1]

    def decode_str(self, data):
        if self.encoding == "bytes":
            return data
        return data.decode(self.encoding, "strict")

    # ---- main loop ------------------------------------------------------------------------
    def load(self):
        self.stack = []
        read = self._read
        dispatch = _DISPATCH
        while True:
            pos = self._tell()
            key = read(1)
            if not key:
                raise EOFError("Ran out of input")
            handler = dispatch.get(key[0])
            if handler is None:
                raise pickle.UnpicklingError(
                    f"Unsupported operand {key[0]} ({_opname(key[0])}) at position {pos}: "
                    "the weights-only unpickler does not execute it")
            try:
                handler(self)
            except _Stop:
                return self.result
            except RecursionError as e:
                raise pickle.UnpicklingError(
                    f"invalid pickle data at position {pos} ({_opname(key[0])}): nested too "
                    f"deeply ({e})") from None
            except (pickle.UnpicklingError, RuntimeError, EOFError):
                raise
            except (TypeError, ValueError, KeyError, IndexError, AttributeError, struct.error,
                    UnicodeDecodeError, OverflowError, MemoryError) as e:
                raise pickle.UnpicklingError(
                    f"invalid pickle data at position {pos} ({_opname(key[0])}): "
                    f"{type(e).__name__}: {e}") from None

    # ---- opcodes: values ------------------------------------------------------------------
    def op_proto(self):
        self.proto = self.read(1)[0]
        if self.proto > pickle.HIGHEST_PROTOCOL:
            raise pickle.UnpicklingError(f"unsupported pickle protocol: {self.proto}")

    def op_frame(self):
        self.read(8)  # framing is a hint for buffered readers; the data follows inline

    def op_stop(self):
        self.result = self.pop()
        raise _Stop

    def op_none(self):
        self.stack.append(None)

    def op_newtrue(self):
        self.stack.append(True)

    def op_newfalse(self):
        self.stack.append(False)

    def op_int(self):
        data = self.readline()
        if data == b"00":
            value = False
        elif data == b"01":
            value = True
        else:
            value = int(data, 0)
        self.stack.append(value)

    def op_binint(self):
        self.stack.append(_unpack("<i", self.read(4))[0])

    def op_binint1(self):
        self.stack.append(self.read(1)[0])

    def op_binint2(self):
        self.stack.append(_unpack("<H", self.read(2))[0])

    def op_long(self):
        data = self.readline()
        if data.endswith(b"L"):
            data = data[:-1]
        self.stack.append(int(data, 0))

    def op_long1(self):
        n = self.read(1)[0]
        self.stack.append(int.from_bytes(self.read(n), "little", signed=True))

    def op_long4(self):
        n = _unpack("<i", self.read(4))[0]
        if n < 0:
            raise pickle.UnpicklingError("LONG pickle has negative byte count")
        self.stack.append(int.from_bytes(self.read(n), "little", signed=True))

    def op_float(self):
        self.stack.append(float(self.readline()))

    def op_binfloat(self):
        self.stack.append(_unpack(">d", self.read(8))[0])

    def op_string(self):
        data = self.readline()
        if len(data) >= 2 and data[0] == data[-1] and data[0] in b"\"'":
            data = data[1:-1]
        else:
            raise pickle.UnpicklingError("the STRING opcode argument must be quoted")
        import codecs
        self.stack.append(self.decode_str(codecs.escape_decode(data)[0]))

    def op_binstring(self):
        n = _unpack("<i", self.read(4))[0]
        if n < 0:
            raise pickle.UnpicklingError("BINSTRING pickle has negative byte count")
        self.stack.append(self.decode_str(self.read(n)))

    def op_short_binstring(self):
        self.stack.append(self.decode_str(self.read(self.read(1)[0])))

    def op_unicode(self):
        self.stack.append(str(self.readline(), "raw-unicode-escape"))

    def op_binunicode(self):
        n = _unpack("<I", self.read(4))[0]
        self.stack.append(str(self.read(n), "utf-8", "surrogatepass"))

    def op_binunicode8(self):
        n = _unpack("<Q", self.read(8))[0]
        if n > sys.maxsize:
            raise pickle.UnpicklingError("BINUNICODE8 exceeds system's maximum size")
        self.stack.append(str(self.read(n), "utf-8", "surrogatepass"))

    def op_short_binunicode(self):
        self.stack.append(str(self.read(self.read(1)[0]), "utf-8", "surrogatepass"))

    def op_binbytes(self):
        self.stack.append(self.read(_unpack("<I", self.read(4))[0]))

    def op_short_binbytes(self):
        self.stack.append(self.read(self.read(1)[0]))

    def op_binbytes8(self):
        n = _unpack("<Q", self.read(8))[0]
        if n > sys.maxsize:
            raise pickle.UnpicklingError("BINBYTES8 exceeds system's maximum size")
        self.stack.append(self.read(n))

    def op_bytearray8(self):
        n = _unpack("<Q", self.read(8))[0]
        if n > sys.maxsize:
            raise pickle.UnpicklingError("BYTEARRAY8 exceeds system's maximum size")
        self.stack.append(bytearray(self.read(n)))

    # ---- opcodes: containers --------------------------------------------------------------
    def op_mark(self):
        self.stack.append(_MARK)

    def op_pop(self):
        if self.stack:
            self.stack.pop()
        else:
            raise pickle.UnpicklingError("unpickling stack underflow")

    def op_pop_mark(self):
        self.pop_mark()

    def op_dup(self):
        self.stack.append(self.top())

    def op_empty_tuple(self):
        self.stack.append(())

    def op_tuple(self):
        items = self.pop_mark()
        self.charge(_TUPLE_COST + 8 * len(items))
        self.stack.append(tuple(items))

    def op_tuple1(self):
        self.charge(_TUPLE_COST)
        self.stack.append((self.pop(),))

    def op_tuple2(self):
        self.charge(_TUPLE_COST)
        b = self.pop()
        self.stack.append((self.pop(), b))

    def op_tuple3(self):
        self.charge(_TUPLE_COST)
        c = self.pop()
        b = self.pop()
        self.stack.append((self.pop(), b, c))

    def op_empty_list(self):
        self.charge(_LIST_COST)
        self.stack.append([])

    def op_list(self):
        self.charge(_LIST_COST)
        self.stack.append(self.pop_mark())

    def op_empty_dict(self):
        self.charge(_DICT_COST)
        self.stack.append({})

    def op_dict(self):
        items = self.pop_mark()
        self.charge(_DICT_COST + 8 * len(items))
        if len(items) % 2:
            raise pickle.UnpicklingError("odd number of items for DICT")
        self.stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})

    def op_empty_set(self):
        self.charge(_SET_COST)
        self.stack.append(set())

    def op_frozenset(self):
        items = self.pop_mark()
        self.charge(_SET_COST + 16 * len(items))
        self.stack.append(frozenset(items))

    def op_append(self):
        value = self.pop()
        target = self.top()
        if type(target) is not list:
            raise pickle.UnpicklingError(f"Can only append to lists, but got {type(target)}")
        target.append(value)

    def op_appends(self):
        items = self.pop_mark()
        target = self.top()
        if type(target) is not list:
            raise pickle.UnpicklingError(f"Can only extend lists, but got {type(target)}")
        target.extend(items)

    def _mapping_target(self, opcode):
        target = self.top()
        if type(target) not in (dict, collections.OrderedDict, collections.Counter):
            raise pickle.UnpicklingError(
                f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, "
                f"but got {type(target)}")
        return target

    def op_setitem(self):
        value = self.pop()
        key = self.pop()
        self._mapping_target("SETITEM")[key] = value

    def op_setitems(self):
        items = self.pop_mark()
        if len(items) % 2:
            raise pickle.UnpicklingError("odd number of items for SETITEMS")
        target = self._mapping_target("SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def op_additems(self):
        items = self.pop_mark()
        target = self.top()
        if type(target) is not set:
            raise pickle.UnpicklingError(f"Can only ADDITEMS to sets, but got {type(target)}")
        self.charge(16 * len(items))
        target.update(items)

    # ---- opcodes: memo --------------------------------------------------------------------
    def _get(self, index):
        try:
            self.stack.append(self.memo[index])
        except KeyError:
            raise pickle.UnpicklingError(f"Memo value not found at index {index}") from None

    def _put(self, index):
        if index < 0 or index >= _MAX_MEMO_INDEX:
            raise pickle.UnpicklingError(f"invalid memo index {index}")
        if index not in self.memo:
            self.charge(_MEMO_COST)
        self.memo[index] = self.top()

    def op_get(self):
        self._get(int(self.readline()))

    def op_binget(self):
        self._get(self.read(1)[0])

    def op_long_binget(self):
        self._get(_unpack("<I", self.read(4))[0])

    def op_put(self):
        self._put(int(self.readline()))

    def op_binput(self):
        self._put(self.read(1)[0])

    def op_long_binput(self):
        self._put(_unpack("<I", self.read(4))[0])

    def op_memoize(self):
        self._put(len(self.memo))

    # ---- opcodes: the ones that reach outside data ----------------------------------------
    def _global(self, module, name):
        if self.proto < 3:
            if (module, name) in NAME_MAPPING:
                module, name = NAME_MAPPING[(module, name)]
            elif module in IMPORT_MAPPING:
                module = IMPORT_MAPPING[module]
        self.stack.append(self.resolve_global(module, name))

    def op_global(self):
        module = self.readline().decode("utf-8")
        name = self.readline().decode("utf-8")
        self._global(module, name)

    def op_stack_global(self):
        name = self.pop()
        module = self.pop()
        if type(name) is not str or type(module) is not str:
            raise pickle.UnpicklingError("STACK_GLOBAL requires str")
        self._global(module, name)

    def op_reduce(self):
        args = self.pop()
        func = self.pop()
        if not self.is_callable(func):
            raise pickle.UnpicklingError(f"Trying to call reduce for unrecognized function {func!r}")
        if type(args) is not tuple:
            raise pickle.UnpicklingError("REDUCE arguments must be a tuple")
        self.charge(_CALL_COST)
        self.stack.append(func(*args))

    def op_newobj(self):
        args = self.pop()
        cls = self.pop()
        if not self.is_class(cls):
            raise pickle.UnpicklingError(
                "Can only create new object for nn.Parameter or classes allowlisted via "
                f"`add_safe_globals` but got {cls!r}")
        if type(args) is not tuple:
            raise pickle.UnpicklingError("NEWOBJ arguments must be a tuple")
        self.stack.append(_new_object(cls, args, {}))

    def op_newobj_ex(self):
        kwargs = self.pop()
        args = self.pop()
        cls = self.pop()
        if not self.is_class(cls):
            raise pickle.UnpicklingError(
                f"Can only create new object for classes allowlisted via `add_safe_globals` but "
                f"got {cls!r}")
        if type(args) is not tuple or type(kwargs) is not dict:
            raise pickle.UnpicklingError("NEWOBJ_EX arguments must be a tuple and a dict")
        self.stack.append(_new_object(cls, args, kwargs))

    def op_build(self):
        state = self.pop()
        inst = self.top()
        cls = type(inst)
        from .._core.tensor import Tensor
        if isinstance(inst, Tensor):
            from ._rebuild import set_tensor_state
            set_tensor_state(inst, state)
        elif cls in (collections.OrderedDict, collections.Counter):
            if type(state) is not dict or not all(type(k) is str for k in state):
                raise pickle.UnpicklingError("OrderedDict state must be a dict of str keys")
            inst.__dict__.update(state)
        elif self.is_class(cls):
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None and not _is_default_setstate(cls):
                setstate(state)
            else:
                slotstate = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slotstate = state
                if state:
                    inst.__dict__.update(state)
                if slotstate:
                    for k, v in slotstate.items():
                        setattr(inst, k, v)
        else:
            raise pickle.UnpicklingError(
                "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                f"`add_safe_globals`, but got {cls}")

    def op_binpersid(self):
        pid = self.pop()
        if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
            raise pickle.UnpicklingError(
                f"Only persistent_load of storage is allowed, but got {pid!r:.80}")
        self.stack.append(self.persistent_load(pid))


def _new_object(cls, args, kwargs):
    from ..nn.parameter import Parameter
    if cls is Parameter:
        from ._rebuild import rebuild_parameter
        if kwargs or not 1 <= len(args) <= 2:
            raise pickle.UnpicklingError("nn.Parameter is rebuilt from (data, requires_grad)")
        return rebuild_parameter(args[0], args[1] if len(args) == 2 else True)
    return cls.__new__(cls, *args, **kwargs)


def _is_default_setstate(cls):
    return getattr(cls, "__setstate__", None) is getattr(object, "__setstate__", None)


_MARK = _Mark()

_OPCODES = {
    pickle.PROTO: "proto", pickle.FRAME: "frame", pickle.STOP: "stop", pickle.NONE: "none",
    pickle.NEWTRUE: "newtrue", pickle.NEWFALSE: "newfalse", pickle.INT: "int",
    pickle.BININT: "binint", pickle.BININT1: "binint1", pickle.BININT2: "binint2",
    pickle.LONG: "long", pickle.LONG1: "long1", pickle.LONG4: "long4", pickle.FLOAT: "float",
    pickle.BINFLOAT: "binfloat", pickle.STRING: "string", pickle.BINSTRING: "binstring",
    pickle.SHORT_BINSTRING: "short_binstring", pickle.UNICODE: "unicode",
    pickle.BINUNICODE: "binunicode", pickle.BINUNICODE8: "binunicode8",
    pickle.SHORT_BINUNICODE: "short_binunicode", pickle.BINBYTES: "binbytes",
    pickle.SHORT_BINBYTES: "short_binbytes", pickle.BINBYTES8: "binbytes8",
    pickle.BYTEARRAY8: "bytearray8", pickle.MARK: "mark", pickle.POP: "pop",
    pickle.POP_MARK: "pop_mark", pickle.DUP: "dup", pickle.EMPTY_TUPLE: "empty_tuple",
    pickle.TUPLE: "tuple", pickle.TUPLE1: "tuple1", pickle.TUPLE2: "tuple2",
    pickle.TUPLE3: "tuple3", pickle.EMPTY_LIST: "empty_list", pickle.LIST: "list",
    pickle.EMPTY_DICT: "empty_dict", pickle.DICT: "dict", pickle.EMPTY_SET: "empty_set",
    pickle.FROZENSET: "frozenset", pickle.APPEND: "append", pickle.APPENDS: "appends",
    pickle.SETITEM: "setitem", pickle.SETITEMS: "setitems", pickle.ADDITEMS: "additems",
    pickle.GET: "get", pickle.BINGET: "binget", pickle.LONG_BINGET: "long_binget",
    pickle.PUT: "put", pickle.BINPUT: "binput", pickle.LONG_BINPUT: "long_binput",
    pickle.MEMOIZE: "memoize", pickle.GLOBAL: "global", pickle.STACK_GLOBAL: "stack_global",
    pickle.REDUCE: "reduce", pickle.NEWOBJ: "newobj", pickle.NEWOBJ_EX: "newobj_ex",
    pickle.BUILD: "build", pickle.BINPERSID: "binpersid",
}
_DISPATCH = {code[0]: getattr(WeightsUnpickler, "op_" + name) for code, name in _OPCODES.items()}
_NAMES = {v[0]: k for k, v in vars(pickle).items() if k.isupper() and isinstance(v, bytes)
          and len(v) == 1}


def _opname(code):
    return _NAMES.get(code, f"opcode {code}")
