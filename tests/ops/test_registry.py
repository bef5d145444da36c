"""The operator registry's self-test: every op carries every rule, or says why not.

For each op in ``ember._core.op.REGISTRY`` (after importing ember and every sub-package
that declares ops), each rule below must exist or be marked absent with a reason in
``op.unsupported`` (``Op(..., unsupported={rule: reason})`` or
``ember._core.op.mark_unsupported``):

* kernel -- always required;
* vjp -- or the op is non-differentiable (``differentiable=False``);
* shape -- the shape/dtype rule on metadata;
* batch -- the vmap rule (``op.batch``, or the name table while ops move); random ops are
  batched by the vmap mode itself, per its ``randomness`` flag, so their category counts;
* jvp -- or the mark ``JVP_FROM_VJP`` (forward AD derives it); non-differentiable ops
  need none;
* decomp -- a decomposition into primitives, or the primitive/no-decomposition mark;
* lowering -- a C lowering or an extern mark.

A check is one line of ``CHECKS``.  Checks that fail today (``_PENDING``) are strict
expected failures until their work lands; ``_AWAITING`` names, exactly, the ops of work in
progress elsewhere that still lack a rule or reason.  The summary prints per-rule coverage.
"""
import importlib

import pytest

import ember
from ember._core.op import REGISTRY, RULES, Category
from ember.ops._batching import _fallback_rule, rule_for

# sub-packages whose import may declare ops (they register on import)
for _mod in ("ember.nn", "ember.linalg", "ember.fft", "ember.special", "ember.distributions",
             "ember.func"):
    importlib.import_module(_mod)


def _ember_ops():
    # ops declared on first use (view_dtype) since ember's import get their decomposition and
    # lowering as ember/__init__ gives the others
    from ember.ops import decompositions, lowering
    decompositions.install()
    lowering.install()
    # ops other tests register on the fly (throwaway probes) are not part of the library
    return {n: op for n, op in REGISTRY.items()
            if str(getattr(op.kernel, "__module__", "")).startswith("ember")}


def _marked(op, rule):
    return bool(op.unsupported.get(rule))


def _nondiff(op):
    return not op.differentiable


CHECKS = {
    "kernel": lambda op: callable(op.kernel),
    "vjp": lambda op: op.vjp is not None or _nondiff(op) or _marked(op, "vjp"),
    "shape": lambda op: op.shape is not None or _marked(op, "shape"),
    "batch": lambda op: rule_for(op) is not _fallback_rule or op.category is Category.RANDOM or
    _marked(op, "batch"),
    "jvp": lambda op: op.jvp is not None or _nondiff(op) or _marked(op, "jvp"),
    "decomp": lambda op: op.decomp is not None or _marked(op, "decomp"),
    "lowering": lambda op: getattr(op, "lowering", None) is not None or _marked(op, "lowering"),
}

_LATER = pytest.mark.xfail(strict=True, reason="decompositions/lowerings land with the "
                                                "primitives work")
_PENDING = set()  # checks that fail today: strict xfails until the work lands

# Ops whose declarations are being moved under ember/ops (nn, linalg, special, fft,
# distributions) or written (primitives) by other work in progress, and lack a rule or a
# reason today.  It only shrinks: no new op may join it, and the summary names the entries
# that have their rule or reason by now (take them out).
_AWAITING = {}


def _missing(rule):
    return sorted(name for name, op in _ember_ops().items() if not CHECKS[rule](op))


@pytest.mark.parametrize("rule", [pytest.param(r, marks=_LATER) if r in _PENDING else r
                                  for r in CHECKS])
def test_every_op_has_rule_or_reason(rule):
    awaiting = _AWAITING.get(rule, set())
    missing = [n for n in _missing(rule) if n not in awaiting]
    assert not missing, f"{len(missing)} ops have no {rule} rule and no reason: {missing}"


def test_checks_cover_every_rule():
    assert set(RULES) | {"kernel"} == set(CHECKS)


def test_marks_are_not_stale():
    # a mark beside an existing rule would hide that the rule is there (or the reverse)
    stale = [(n, r) for n, op in _ember_ops().items() for r in op.unsupported
             if getattr(op, r, None) is not None]
    assert not stale, stale


def test_categories_are_the_closed_enum():
    bad = [n for n, op in _ember_ops().items()
           if op.category is not None and type(op.category) is not Category]
    assert not bad, bad
    with pytest.raises(ValueError, match="unknown category 'elementwise'"):
        ember._core.op.Op("_registry_test_bad_category", lambda xp, x: x, category="elementwise")
    assert "_registry_test_bad_category" not in REGISTRY


def test_unsupported_needs_a_known_rule_and_a_reason():
    Op = ember._core.op.Op
    with pytest.raises(ValueError, match="names no rule"):
        Op("_registry_test_bad_rule", lambda xp, x: x, unsupported={"speed": "slow"})
    with pytest.raises(ValueError, match="needs a reason"):
        Op("_registry_test_no_reason", lambda xp, x: x, unsupported={"batch": " "})
    with pytest.raises(ValueError, match="has a batch rule and marks it unsupported"):
        Op("_registry_test_both", lambda xp, x: x, batch=lambda *a: a,
           unsupported={"batch": "loop fallback, reason: none"})
    assert not any(n.startswith("_registry_test") for n in REGISTRY)


def test_name_table_holds_no_core_ops():
    # the ops of ember/ops/*.py carry their batching rule as their batch field
    from ember.ops._batching import BATCH_RULES
    core = [n for n in BATCH_RULES if n in REGISTRY and
            str(REGISTRY[n].kernel.__module__).count(".") == 2 and
            str(REGISTRY[n].kernel.__module__).startswith("ember.ops.")]
    assert not core, core


def test_coverage_summary(capsys):
    ops = _ember_ops()
    total = len(ops)
    with capsys.disabled():
        print(f"\nregistry: {total} ops")
        for rule in CHECKS:
            have = sum(1 for op in ops.values() if
                       (getattr(op, rule, None) is not None if rule != "kernel" else True))
            ok = total - len(_missing(rule))
            done = sorted(n for n in _AWAITING.get(rule, ()) if n in ops and CHECKS[rule](ops[n]))
            print(f"  {rule:9s} rule {have:4d}   rule or reason {ok:4d}/{total}" +
                  (f"   done, leave _AWAITING: {done}" if done else ""))
    assert total > 250
