"""Every registered operator is reached by some op-database record (tests/opdb): the
collector in opdb/coverage.py runs each record under a recording dispatch mode."""
import ember
from opdb.all import OPS
from opdb.coverage import NO_RECORD, ember_ops, reached


def test_every_registered_op_is_reached_by_a_record():
    seen = set().union(*reached().values())
    unreached = sorted(ember_ops() - seen - set(NO_RECORD))
    assert not unreached, f"{len(unreached)} registered operators reached by no op-database " \
                          f"record (add records, or list them in NO_RECORD): {unreached}"


def test_no_record_entries_are_real_and_unreached():
    seen = set().union(*reached().values())
    registered = ember_ops()
    assert set(NO_RECORD) <= registered, set(NO_RECORD) - registered
    assert not set(NO_RECORD) & seen, f"reached now, drop from NO_RECORD: {set(NO_RECORD) & seen}"
    assert all(len(r) > 20 for r in NO_RECORD.values())


def test_hand_listed_ops_are_registered():
    registered = set(ember._core.op.REGISTRY)
    bad = {(o.name, n) for o in OPS for n in o.ops if n not in registered}
    assert not bad, bad

