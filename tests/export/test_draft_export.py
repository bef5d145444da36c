"""ember.export.draft_export: a program plus a report of what export would have refused,
against torch.export.draft_export (the test-only oracle)."""
import gc
import warnings

import numpy as np
import pytest
import torch

import ember


def _mod(lib):
    class M(lib.nn.Module):
        def forward(self, x, y):
            return x.reshape(4, 3) * 2 + y.sum(0)   # specialises x's declared dynamic dim
    return M()


def _inputs(lib):
    return lib.ones(12), lib.ones(5, 3)


def _draft(lib, ds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = lib.export.draft_export(_mod(lib), _inputs(lib), dynamic_shapes=ds)
        # torch's draft_export drops a temporary log file unclosed: collected here, where
        # its ResourceWarning is ignored, not in a later test
        gc.collect()
    return ep


def test_specialised_dynamic_dim_is_reported_not_raised():
    ds = {"x": ("DYN",), "y": ("DYN", None)}

    def spec(lib):
        return {k: tuple(lib.export.Dim.DYNAMIC if e == "DYN" else e for e in v)
                for k, v in ds.items()}
    with pytest.raises(ember.export.UserError, match="Constraints violated"):
        ember.export.export(_mod(ember), _inputs(ember), dynamic_shapes=spec(ember))
    tep, eep = _draft(torch, spec(torch)), _draft(ember, spec(ember))
    for ep in (tep, eep):
        assert not ep._report.successful()
        assert [f.failure_type.name for f in ep._report.failures] == ["GUARD_ADDED"]
        assert "1 issue(s) found during export" in str(ep._report)
    assert eep._report.failures[0].data["static"] == ["x.shape[0]", "y.shape[1]"]
    # y's first dim stays dynamic in both, x's is specialised to 12
    assert len(eep.range_constraints) == len(tep.range_constraints) == 1
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(12).astype("f4"), rng.standard_normal((7, 3)).astype("f4")
    np.testing.assert_allclose(eep.module()(ember.tensor(x), ember.tensor(y)).numpy(),
                               tep.module()(torch.tensor(x), torch.tensor(y)).numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError):
        eep.module()(ember.ones(8), ember.ones(7, 3))
    with pytest.raises(NotImplementedError):
        eep._report.apply_suggested_fixes()
    with pytest.raises(NotImplementedError):
        tep._report.apply_suggested_fixes()


def test_clean_program_reports_success():
    tep, eep = _draft(torch, None), _draft(ember, None)
    assert tep._report.successful() and eep._report.successful()
    assert eep._report.failures == tep._report.failures == []
    assert "No issues are found" in str(eep._report) and "No issues are found" in \
        str(tep._report)


def test_data_dependent_branch_raises_with_the_report():
    class N(ember.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x + 1
            return x - 1
    with pytest.raises(ember.export.UserError, match="Data dependent error"):
        ember.export.draft_export(N(), (ember.ones(3),))
