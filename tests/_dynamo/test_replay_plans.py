"""A compiled function keeps one replay plan per guard set (issue 18).

Calls that alternate between programs (a module in train and in eval mode, two static
input shapes) each replay their own plan instead of remaking a single one in turn; the
plans are bounded by ``config.cache_size_limit``.  How often the Python ran is counted from
outside (the calls that took the capturing path, ``CompiledFunction._run``).
"""
import numpy as np
import pytest

import ember
import ember.nn as nn
from ember._dynamo import config
from test_training_step_replay import python_runs  # noqa: F401  (the fixture)


@pytest.fixture(autouse=True)
def _fresh_caches():
    ember._dynamo.reset()
    yield


def _net():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(8, 2))


def test_train_and_eval_alternating_replay_their_own_plans(python_runs):
    model, ref = _net(), _net()
    cf = ember.compile(model, backend="eager")
    x = ember.randn(5, 6)
    for i in range(10):
        training = i % 2 == 0
        model.train(training)
        ref.train(training)
        ember.manual_seed(i)
        with ember.no_grad():
            got = cf(x)
        ember.manual_seed(i)
        with ember.no_grad():
            want = ref(x)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        # the running statistics moved as eager's (train) or stayed (eval)
        np.testing.assert_array_equal(model[1].running_mean.numpy(),
                                      ref[1].running_mean.numpy())
    assert python_runs[0] == 2  # one capture per mode, then each mode replays
    assert len(cf._compiled_call.cache.replay_plans) == 2
    assert sum(p.hits for p in cf._compiled_call.cache.replay_plans) == 8


def test_two_static_shapes_alternating(python_runs):
    w = ember.randn(4, 3)

    def f(x):
        return (x @ w).relu().sum(0)

    cf = ember.compile(f, backend="eager", dynamic=False)
    xs = [ember.randn(2, 4), ember.randn(7, 4)]
    for i in range(12):
        x = xs[i % 2]
        np.testing.assert_array_equal(cf(x).numpy(), f(x).numpy())
    assert python_runs[0] == 2
    assert cf.cache.compiles == 2
    assert sorted(p.hits for p in cf.cache.replay_plans) == [5, 5]


def test_plans_are_bounded_by_the_cache_size_limit(python_runs):
    def f(x):
        return x * 2 + 1

    cf = ember.compile(f, backend="eager", dynamic=False)
    xs = [ember.ones(n) for n in (2, 3, 4)]
    with config.patch(cache_size_limit=2), pytest.warns(RuntimeWarning,
                                                         match="cache_size_limit"):
        for i in range(9):
            x = xs[i % 3]
            np.testing.assert_array_equal(cf(x).numpy(), f(x).numpy())
        assert len(cf.cache.replay_plans) == 2
    # three shapes cycling through two plans: the plan of the shape used longest ago
    # has gone each time, so every call runs the Python
    assert python_runs[0] == 9


def test_a_stale_plan_is_not_replayed_after_its_guards_change(python_runs):
    model = nn.Linear(3, 2)
    cf = ember.compile(model, backend="eager")
    x = ember.ones(1, 3)
    cf(x)
    model.eval()
    cf(x)
    model.train()
    with ember.no_grad():
        model.weight.add_(1.0)  # in place: the same tensors, new values
    np.testing.assert_array_equal(cf(x).detach().numpy(), model(x).detach().numpy())
    model.weight = nn.Parameter(ember.zeros(2, 3))  # a new parameter: the guards fail
    np.testing.assert_array_equal(cf(x).detach().numpy(), model(x).detach().numpy())
    assert python_runs[0] == 3
