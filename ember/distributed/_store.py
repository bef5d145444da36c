"""Key-value stores for rendezvous and metadata (``torch.distributed`` stores).

`TCPStore` (a threaded server in one process, clients everywhere), `FileStore` (a file on a
shared file system, locked with ``flock``), `HashStore` (in-process) and `PrefixStore` all
share torch's interface: ``set/get/add/compare_set/delete_key/num_keys/check/wait/append/
multi_get/multi_set`` with a timeout.  Keys are strings; values are bytes (``str`` values are
encoded as UTF-8); counters made by `add` are stored as their decimal text, as torch does.

The wire protocol of `TCPStore` carries only length-prefixed bytes (no pickle), so a store
peer can never make another process run code.  Stores only hold rendezvous data and small
metadata; every collective runs on MPI.
"""
import datetime
import fcntl
import os
import socket
import socketserver
import struct
import threading
import time

from ._errors import DistNetworkError, DistStoreError

__all__ = ["Store", "TCPStore", "FileStore", "HashStore", "PrefixStore"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


def _secs(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _b(value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (list, tuple)):  # torch accepts a list of ints as bytes
        return bytes(value)
    raise TypeError(f"store values must be str or bytes, got {type(value).__name__}")


class Store:
    """Base class of all stores: a key-value map shared by the processes of a job."""

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        self._timeout = timeout if isinstance(timeout, datetime.timedelta) \
            else datetime.timedelta(seconds=float(timeout))

    @property
    def timeout(self):
        """The default timeout of blocking operations (a timedelta)."""
        return self._timeout

    def set_timeout(self, timeout):
        """Sets the store's default timeout, used by `get` and `wait`."""
        self._timeout = timeout if isinstance(timeout, datetime.timedelta) \
            else datetime.timedelta(seconds=float(timeout))

    # Subclasses implement the primitives below; the public methods add torch's argument forms.
    def _timeout_error(self, keys, secs):
        return DistStoreError(f"{type(self).__name__}: timed out after {secs:g}s waiting for "
                              f"key(s) {list(keys)}")

    def multi_get(self, keys):
        """Returns the values of ``keys``, waiting for each as `get` does."""
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values):
        """Sets each key of ``keys`` to the matching value of ``values``."""
        if len(keys) != len(values):
            raise ValueError(f"multi_set: {len(keys)} keys but {len(values)} values")
        for k, v in zip(keys, values):
            self.set(k, v)

    def append(self, key, value):
        """Appends ``value`` to the value of ``key`` (creating it when absent)."""
        while True:
            cur = self.get(key) if self.check([key]) else b""
            new = cur + _b(value)
            if self.compare_set(key, cur if cur else "", new) == new:
                return

    def has_extended_api(self):
        return True


class _Table:
    """The shared dict with a condition variable: the engine of HashStore and TCPStore's
    server."""

    def __init__(self):
        self.data = {}
        self.cond = threading.Condition()

    def set(self, key, value):
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def get(self, key, secs):
        deadline = None if secs is None else time.monotonic() + secs
        with self.cond:
            while key not in self.data:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self.cond.wait(left)
            return self.data[key]

    def wait(self, keys, secs):
        deadline = None if secs is None else time.monotonic() + secs
        with self.cond:
            while not all(k in self.data for k in keys):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def add(self, key, delta):
        with self.cond:
            new = int(self.data.get(key, b"0")) + int(delta)
            self.data[key] = str(new).encode()
            self.cond.notify_all()
            return new

    def compare_set(self, key, expected, desired):
        with self.cond:
            cur = self.data.get(key)
            if (cur is None and expected == b"") or cur == expected:
                self.data[key] = desired
                self.cond.notify_all()
                return desired
            return expected if cur is None else cur

    def append(self, key, value):
        with self.cond:
            self.data[key] = self.data.get(key, b"") + value
            self.cond.notify_all()

    def delete(self, key):
        with self.cond:
            return self.data.pop(key, None) is not None

    def check(self, keys):
        with self.cond:
            return all(k in self.data for k in keys)

    def num_keys(self):
        with self.cond:
            return len(self.data)


class HashStore(Store):
    """A thread-safe store in this process's memory (for threads of one process)."""

    def __init__(self):
        super().__init__()
        self._t = _Table()

    def set(self, key, value):
        self._t.set(key, _b(value))

    def get(self, key):
        v = self._t.get(key, _secs(self.timeout))
        if v is None:
            raise self._timeout_error([key], _secs(self.timeout))
        return v

    def add(self, key, value):
        return self._t.add(key, value)

    def compare_set(self, key, expected_value, desired_value):
        return self._t.compare_set(key, _b(expected_value), _b(desired_value))

    def append(self, key, value):
        self._t.append(key, _b(value))

    def delete_key(self, key):
        return self._t.delete(key)

    def check(self, keys):
        return self._t.check(list(keys))

    def num_keys(self):
        return self._t.num_keys()

    def wait(self, keys, timeout=None):
        secs = _secs(self.timeout if timeout is None else timeout)
        if not self._t.wait(list(keys), secs):
            raise self._timeout_error(keys, secs)


# ---- TCPStore ------------------------------------------------------------------------
_HDR = struct.Struct("!cI")     # op, number of args
_LEN = struct.Struct("!I")
_JOIN_KEY = "\0ember.workers"   # not visible to users: the server keeps it outside the table


def _recv_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("store peer closed the connection")
        got += k
    return bytes(buf)


def _send_msg(sock, op, args):
    parts = [_HDR.pack(op, len(args))]
    for a in args:
        parts.append(_LEN.pack(len(a)))
        parts.append(a)
    sock.sendall(b"".join(parts))


def _recv_args(sock, n):
    return [_recv_exact(sock, _LEN.unpack(_recv_exact(sock, 4))[0]) for _ in range(n)]


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        table, joined = self.server.table, self.server.joined
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                op, n = _HDR.unpack(_recv_exact(sock, _HDR.size))
                args = _recv_args(sock, n)
            except (ConnectionError, OSError):
                return
            key = args[0].decode() if args else ""
            ok, out = True, []
            if op == b"S":
                table.set(key, args[1])
            elif op == b"G":
                v = table.get(key, float(args[1]) if args[1] else None)
                ok, out = v is not None, [v or b""]
            elif op == b"A":
                out = [str(table.add(key, int(args[1]))).encode()]
            elif op == b"C":
                out = [table.compare_set(key, args[1], args[2])]
            elif op == b"P":
                table.append(key, args[1])
            elif op == b"D":
                out = [b"1" if table.delete(key) else b"0"]
            elif op == b"K":
                out = [b"1" if table.check([a.decode() for a in args]) else b"0"]
            elif op == b"N":
                out = [str(table.num_keys()).encode()]
            elif op == b"W":
                secs = float(args[0]) if args[0] else None
                ok = table.wait([a.decode() for a in args[1:]], secs)
            elif op == b"J":
                joined.add(_JOIN_KEY, 1)
            else:
                ok, out = False, [b"unknown op"]
            try:
                _send_msg(sock, b"\x00" if ok else b"\x01", out)
            except OSError:
                return


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr):
        self.table = _Table()
        self.joined = _Table()
        super().__init__(addr, _Handler)


class TCPStore(Store):
    """A TCP-based distributed key-value store.

    One process (``is_master=True``) runs the server in background threads; every process
    (the master included) talks to it as a client.  ``port=0`` on the master picks a free
    port, readable as `port`.

    Args:
        host_name (str): hostname or IP address the server runs on.
        port (int): port the server listens on.
        world_size (int, optional): total number of store users (for ``wait_for_workers``).
        is_master (bool): True when this process runs the server.
        timeout (timedelta): timeout of the store's blocking operations and of connecting.
        wait_for_workers (bool): the master waits until ``world_size`` clients connected.
        multi_tenant, master_listen_fd, use_libuv: accepted for torch compatibility.
    """

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        self._host = host_name
        self._server = None
        self._lock = threading.Lock()
        if is_master:
            try:
                self._server = _Server(("", int(port)))
            except OSError as e:
                raise DistNetworkError(
                    f"The server socket has failed to listen on any local network address. "
                    f"port: {int(port)}, message: {e.strerror or e}") from None
            port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, name="ember-tcpstore",
                             daemon=True).start()
        self._port = int(port)
        self._sock = self._connect(_secs(timeout))
        self._call(b"J", [])
        if is_master and wait_for_workers and world_size:
            secs = _secs(timeout)
            if not self._wait_joined(world_size, secs):
                raise DistStoreError(f"TCPStore: timed out after {secs:g}s waiting for "
                                     f"{world_size} workers to connect to port {self._port}")

    def _wait_joined(self, n, secs):
        deadline = time.monotonic() + (secs if secs is not None else 1e9)
        while int(self._server.joined.data.get(_JOIN_KEY, b"0")) < n:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def _connect(self, secs):
        deadline = time.monotonic() + (secs if secs is not None else 300.0)
        delay, last = 0.005, None
        while True:
            try:
                s = socket.create_connection((self._host, self._port),
                                             timeout=max(0.1, deadline - time.monotonic()))
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(None)
                return s
            except OSError as e:
                last = e
            if time.monotonic() >= deadline:
                raise DistNetworkError(f"TCPStore: could not connect to {self._host}:{self._port}"
                                       f" within {secs:g}s: {last}")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    @property
    def host(self):
        """The hostname of the server."""
        return self._host

    @property
    def port(self):
        """The port the server listens on."""
        return self._port

    @property
    def libuvBackend(self):  # noqa: N802 - torch's name
        return False

    def _call(self, op, args, wait_secs=None):
        with self._lock:
            try:
                # A blocking request may legitimately last its own timeout; give the socket
                # some slack beyond it so a dead server still surfaces as an error.
                self._sock.settimeout(None if wait_secs is None else wait_secs + 10.0)
                _send_msg(self._sock, op, args)
                status, n = _HDR.unpack(_recv_exact(self._sock, _HDR.size))
                out = _recv_args(self._sock, n)
            except (OSError, ConnectionError) as e:
                raise DistNetworkError(f"TCPStore {self._host}:{self._port}: connection lost "
                                       f"({e})") from None
        return status == b"\x00", out

    def set(self, key, value):
        """Inserts ``key`` with ``value``, overwriting any previous value."""
        self._call(b"S", [key.encode(), _b(value)])

    def get(self, key):
        """Returns the value of ``key``, waiting up to the store's timeout for it to be set."""
        secs = _secs(self.timeout)
        ok, out = self._call(b"G", [key.encode(), repr(secs).encode() if secs else b""], secs)
        if not ok:
            raise self._timeout_error([key], secs)
        return out[0]

    def add(self, key, value):
        """Adds ``value`` to the counter ``key`` (created at 0) and returns the new value."""
        return int(self._call(b"A", [key.encode(), str(int(value)).encode()])[1][0])

    def compare_set(self, key, expected_value, desired_value):
        """Sets ``key`` to ``desired_value`` if its value is ``expected_value`` (or it is
        missing and ``expected_value`` is empty); returns the value the key then has (the
        current value when the comparison failed)."""
        return self._call(b"C", [key.encode(), _b(expected_value), _b(desired_value)])[1][0]

    def append(self, key, value):
        self._call(b"P", [key.encode(), _b(value)])

    def delete_key(self, key):
        """Deletes ``key``; returns True if it existed."""
        return self._call(b"D", [key.encode()])[1][0] == b"1"

    def check(self, keys):
        """True if every key of ``keys`` is set (does not wait)."""
        return self._call(b"K", [k.encode() for k in keys])[1][0] == b"1"

    def num_keys(self):
        """The number of keys set in the store."""
        return int(self._call(b"N", [])[1][0])

    def wait(self, keys, timeout=None):
        """Waits until every key of ``keys`` is set, up to ``timeout`` (default: the store's)."""
        secs = _secs(self.timeout if timeout is None else timeout)
        ok, _ = self._call(b"W", [repr(secs).encode() if secs else b""] +
                           [k.encode() for k in keys], secs)
        if not ok:
            raise self._timeout_error(keys, secs)

    def __del__(self):
        try:
            self._sock.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# ---- FileStore -------------------------------------------------------------------------
class FileStore(Store):
    """A store backed by one file that every process can open (a shared file system).

    The file is an append-only log of length-prefixed records, written under an exclusive
    ``flock``; readers replay it.  Blocking operations poll.

    Args:
        file_name (str): path of the file (created if absent).
        world_size (int, optional): number of processes using the store (unused by ember
            except for validation).
    """

    _REC = struct.Struct("!cII")

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        self.path = file_name
        self._world_size = world_size
        fd = os.open(file_name, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)

    def _locked(self, fn):
        with open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                return fn(f)
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _replay(self, f):
        f.seek(0)
        raw = f.read()
        data, i = {}, 0
        while i + self._REC.size <= len(raw):
            op, kl, vl = self._REC.unpack_from(raw, i)
            i += self._REC.size
            key = raw[i:i + kl].decode()
            val = raw[i + kl:i + kl + vl]
            i += kl + vl
            if op == b"S":
                data[key] = val
            else:
                data.pop(key, None)
        return data

    def _write(self, f, op, key, value=b""):
        k = key.encode()
        f.seek(0, 2)
        f.write(self._REC.pack(op, len(k), len(value)) + k + value)
        f.flush()

    def set(self, key, value):
        self._locked(lambda f: self._write(f, b"S", key, _b(value)))

    def _poll(self, ready, keys, secs):
        deadline = time.monotonic() + secs if secs is not None else None
        delay = 0.001
        while True:
            out = self._locked(lambda f: ready(self._replay(f)))
            if out is not None:
                return out
            if deadline is not None and time.monotonic() >= deadline:
                raise self._timeout_error(keys, secs)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def get(self, key):
        return self._poll(lambda d: d.get(key), [key], _secs(self.timeout))

    def add(self, key, value):
        def fn(f):
            new = int(self._replay(f).get(key, b"0")) + int(value)
            self._write(f, b"S", key, str(new).encode())
            return new
        return self._locked(fn)

    def compare_set(self, key, expected_value, desired_value):
        exp, des = _b(expected_value), _b(desired_value)

        def fn(f):
            cur = self._replay(f).get(key)
            if (cur is None and exp == b"") or cur == exp:
                self._write(f, b"S", key, des)
                return des
            return exp if cur is None else cur
        return self._locked(fn)

    def append(self, key, value):
        v = _b(value)
        self._locked(lambda f: self._write(f, b"S", key, self._replay(f).get(key, b"") + v))

    def delete_key(self, key):
        def fn(f):
            if key not in self._replay(f):
                return False
            self._write(f, b"D", key)
            return True
        return self._locked(fn)

    def check(self, keys):
        return self._locked(lambda f: all(k in d for d in [self._replay(f)] for k in keys))

    def num_keys(self):
        return self._locked(lambda f: len(self._replay(f)))

    def wait(self, keys, timeout=None):
        secs = _secs(self.timeout if timeout is None else timeout)
        self._poll(lambda d: True if all(k in d for k in keys) else None, keys, secs)


# ---- PrefixStore -----------------------------------------------------------------------
class PrefixStore(Store):
    """A wrapper around ``store`` that prefixes every key with ``prefix + "/"``."""

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self._prefix = prefix
        self._store = store

    @property
    def underlying_store(self):
        return self._store

    @property
    def timeout(self):
        return self._store.timeout

    def set_timeout(self, timeout):
        self._store.set_timeout(timeout)

    def _k(self, key):
        return f"{self._prefix}/{key}"

    def set(self, key, value):
        self._store.set(self._k(key), value)

    def get(self, key):
        return self._store.get(self._k(key))

    def add(self, key, value):
        return self._store.add(self._k(key), value)

    def compare_set(self, key, expected_value, desired_value):
        return self._store.compare_set(self._k(key), expected_value, desired_value)

    def append(self, key, value):
        self._store.append(self._k(key), value)

    def delete_key(self, key):
        return self._store.delete_key(self._k(key))

    def check(self, keys):
        return self._store.check([self._k(k) for k in keys])

    def num_keys(self):
        return self._store.num_keys()

    def wait(self, keys, timeout=None):
        self._store.wait([self._k(k) for k in keys], timeout)

    def multi_get(self, keys):
        return self._store.multi_get([self._k(k) for k in keys])

    def multi_set(self, keys, values):
        self._store.multi_set([self._k(k) for k in keys], values)
