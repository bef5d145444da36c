"""ember._logging.set_logs: torch's signature and errors, mapped onto ember's switches."""
import logging

import pytest
import torch

import ember
from ember._dynamo import logs


@pytest.fixture(autouse=True)
def _reset():
    yield
    ember._logging.set_logs()


def test_dynamic_debug_reports_sizes_made_dynamic(capsys):
    ember._logging.set_logs(dynamic=logging.DEBUG)
    assert logs.enabled("dynamic") and not logs.enabled("recompiles")
    f = ember.compile(lambda x: x * 2, backend="eager")
    f(ember.ones(3))
    f(ember.ones(5))
    err = capsys.readouterr().err
    assert "size 0 of x is dynamic from now on (was 3, now 5)" in err


def test_artifacts_and_reset():
    ember._logging.set_logs(recompiles=True, graph_breaks=True, output_code=True)
    assert logs.enabled("recompiles") and logs.enabled("graph_breaks") and \
        logs.enabled("output_code")
    ember._logging.set_logs()
    assert not any(logs.enabled(a) for a in logs.ARTIFACTS)
    ember._logging.set_logs(dynamo=logging.INFO)
    assert logs.enabled("recompiles") and logs.enabled("graph_code")
    ember._logging.set_logs(dynamo=logging.WARNING)
    assert not logs.enabled("recompiles")


def test_silent_components_accepted():
    ember._logging.set_logs(export=logging.DEBUG, autograd=logging.INFO, guards=True)
    assert not logs.enabled("recompiles")


def _raised(fn, **kw):
    try:
        fn(**kw)
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    finally:
        torch._logging.set_logs()
    return None


@pytest.mark.parametrize("kw", [{"dynamic": True}, {"dynamo": 7}])
def test_bad_level_is_value_error_like_torch(kw):
    assert _raised(ember._logging.set_logs, **kw) == _raised(torch._logging.set_logs, **kw)


def test_unknown_name_is_type_error_like_torch():
    assert _raised(ember._logging.set_logs, nonsense=True)[0] is \
        _raised(torch._logging.set_logs, nonsense=True)[0] is TypeError
