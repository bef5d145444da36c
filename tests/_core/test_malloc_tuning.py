"""glibc malloc thresholds set at import: freed buffers are reused without new page faults,
and the setting stays off where the user chose malloc settings or turned it off."""
import os
import subprocess
import sys
import textwrap

import pytest

from ember._core import malloc_tuning

# four 2 MiB buffers made and freed 50 times: with glibc's adaptive thresholds the freed
# 8 MiB at the heap's top is trimmed each time and faulted back in the next
_CHURN = textwrap.dedent("""
    import resource
    import numpy as np
    import ember
    for _ in range(3):
        bufs = [np.ones(1 << 19, np.float32) for _ in range(4)]; del bufs
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(50):
        bufs = [np.ones(1 << 19, np.float32) for _ in range(4)]; del bufs
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before,
          ember._malloc_tuning.state()["applied"])
""")


def _page_faults(**env):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("MALLOC_") and k != "EMBER_MALLOC_TUNING"}
    out = subprocess.run([sys.executable, "-c", _CHURN], env={**clean, **env},
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), out[1] == "True"


def test_freed_buffers_are_reused_without_page_faults():
    faults, applied = _page_faults()
    assert applied
    # 50 rounds x 8 MiB would be 100,000+ faults of fresh 4 KiB pages
    assert faults < 500


def test_turned_off_gives_glibc_default_behaviour():
    faults, applied = _page_faults(EMBER_MALLOC_TUNING="0")
    assert not applied
    assert faults > 10_000  # the churn the tuning removes: the test above can fail


def test_user_malloc_settings_win():
    faults, applied = _page_faults(MALLOC_TRIM_THRESHOLD_="131072")
    assert not applied
    assert faults > 10_000  # the user's small trim threshold is what glibc uses


@pytest.mark.parametrize("environ, words", [
    ({"EMBER_MALLOC_TUNING": "0"}, "EMBER_MALLOC_TUNING=0"),
    ({"MALLOC_MMAP_THRESHOLD_": "65536"}, "MALLOC_MMAP_THRESHOLD_"),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}, "GLIBC_TUNABLES"),
])
def test_reason_names_the_setting(environ, words):
    prior = malloc_tuning.state()
    try:
        st = malloc_tuning.apply(environ)
        assert not st["applied"] and words in st["reason"]
    finally:
        malloc_tuning._state.update(prior)
