"""Fuzzer settings (hypothesis profiles): ``ci`` (the default) runs a fixed, derandomised
budget; ``EMBER_FUZZ_PROFILE=explore`` runs 20x more, freshly drawn cases;
``EMBER_FUZZ_SCALE=N`` multiplies the budget of either."""
import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("EMBER_FUZZ_PROFILE", "ci")
SCALE = float(os.environ.get("EMBER_FUZZ_SCALE", "20" if PROFILE == "explore" else "1"))

_COMMON = dict(deadline=None, database=None, print_blob=False,
               suppress_health_check=list(HealthCheck))
settings.register_profile("fuzz-ci", derandomize=True, **_COMMON)
settings.register_profile("fuzz-explore", derandomize=False, **_COMMON)


def fuzz_settings(budget):
    """Settings for one fuzz family with ``budget`` cases in CI (scaled for explore)."""
    return settings(settings.get_profile(f"fuzz-{PROFILE}"),
                    max_examples=max(1, int(budget * SCALE)))
