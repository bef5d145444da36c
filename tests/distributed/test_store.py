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
