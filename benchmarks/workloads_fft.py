"""FFT workloads: batched real-to-complex transforms."""
from .workloads import _arr, workload


@workload("rfft_64x4096", "fft")
def rfft_64x4096(lib):
    x = _arr(lib, (64, 4096))
    return lambda: lib.fft.rfft(x)


@workload("rfft_64x4096_backward", "fft")
def rfft_64x4096_backward(lib):
    x = _arr(lib, (64, 4096), requires_grad=True)

    def step():
        lib.fft.rfft(x).abs().sum().backward()
    return step
