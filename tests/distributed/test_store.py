import datetime
import threading

import pytest

import ember.distributed as dist

T = datetime.timedelta(seconds=1)


def _stores(tmp_path):
    server = dist.TCPStore("127.0.0.1", 0, 2, True, timeout=T, wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", server.port, timeout=T)
    f1 = dist.FileStore(str(tmp_path / "fs"), 2)
    f2 = dist.FileStore(str(tmp_path / "fs"), 2)
    for s in (f1, f2):
        s.set_timeout(T)
    h = dist.HashStore()
    h.set_timeout(T)
    base = dist.HashStore()
    base.set_timeout(T)
    return [(server, client), (f1, f2), (h, h),
            (dist.PrefixStore("p", base), dist.PrefixStore("p", base))]


def test_store_api(tmp_path):
    for a, b in _stores(tmp_path):
        a.set("k", "v")
        assert b.get("k") == b"v"
        a.set("bin", b"\x00\xff")
        assert b.get("bin") == b"\x00\xff"
        assert a.add("n", 3) == 3 and b.add("n", 4) == 7 and b.get("n") == b"7"
        assert a.compare_set("c", "", "x") == b"x"           # missing + empty expected: set
        assert b.compare_set("c", "wrong", "y") == b"x"      # mismatch: current value
        assert b.compare_set("c", "x", "y") == b"y"
        assert b.compare_set("missing", "e", "z") == b"e"
        assert a.check(["k", "n"]) and not a.check(["k", "nope"])
        assert b.num_keys() >= 4
        assert a.delete_key("k") and not a.delete_key("k")
        b.wait(["n", "c"])
        with pytest.raises(dist.DistStoreError, match="nope"):
            b.get("nope")
        with pytest.raises(dist.DistStoreError):
            b.wait(["nope"], datetime.timedelta(seconds=0.2))


def test_store_get_waits_for_set(tmp_path):
    for a, b in _stores(tmp_path):
        threading.Timer(0.1, lambda: a.set("late", "1")).start()
        assert b.get("late") == b"1"


def test_prefix_store_isolates_keys():
    base = dist.HashStore()
    dist.PrefixStore("a", base).set("k", "1")
    assert base.get("a/k") == b"1"
    assert not dist.PrefixStore("b", base).check(["k"])


def test_tcpstore_master_waits_for_workers():
    with pytest.raises(dist.DistStoreError, match="2 workers"):
        dist.TCPStore("127.0.0.1", 0, 2, True, timeout=datetime.timedelta(seconds=0.3))


def test_tcpstore_port_in_use_is_a_network_error():
    import socket
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(dist.DistNetworkError, match=f"failed to listen.*port: {port}"):
            dist.TCPStore("127.0.0.1", port, 1, is_master=True,
                          timeout=datetime.timedelta(seconds=5))


PORT_IN_USE = """
import datetime, sys
import ember.distributed as dist
try:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
except dist.DistNetworkError as e:
    from mpi4py import MPI
    print(f"RANK{MPI.COMM_WORLD.rank} RAISED {e}", flush=True)
    sys.exit(3)
print("JOINED", flush=True)
"""


@pytest.mark.slow
def test_master_port_in_use_fails_every_rank_at_once():
    """Rank 0 cannot listen on MASTER_PORT: every rank raises DistNetworkError at once (the
    others used to retry connecting until the 30-minute timeout, and the job hung)."""
    import socket
    import time
    from dist_helpers import run_ranks
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        start = time.monotonic()
        rc, out = run_ranks(PORT_IN_USE, 2, timeout=60,
                            env=dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
    assert rc != 0 and "JOINED" not in out, out
    assert f"RANK0 RAISED The server socket has failed to listen" in out, out
    assert "RANK1 RAISED init_process_group: rank 0 could not start" in out, out
    assert time.monotonic() - start < 50
