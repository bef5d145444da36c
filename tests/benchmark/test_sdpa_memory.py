"""benchmarks.sdpa_memory measures SDPA's peak memory in a fresh process: ember's blocked
attention stays O(L d) (a few L x d tensors), far below the L x L score matrix."""
from benchmarks import sdpa_memory


def test_peak_memory_is_linear_in_length():
    length, batch, dim = 4096, 1, 64
    one = batch * length * dim * 4 / 2 ** 20  # 1 MiB
    scores = batch * length * length * 4 / 2 ** 20  # 64 MiB
    forward = sdpa_memory.measure("ember", "causal", length, batch, dim)
    backward = sdpa_memory.measure("ember", "backward", length, batch, dim)
    assert forward < 4 * one + 2 < scores / 4
    assert backward < 12 * one + 4 < scores / 2
