"""FFT workloads: batched real-to-complex, complex-to-real and complex transforms (power-of-two
lengths: ember's C FFT; 1x4096 stays with scipy), and rfft's backward."""
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


@workload("irfft_64x4096", "fft")
def irfft_64x4096(lib):
    x = lib.view_as_complex(_arr(lib, (64, 2049, 2)))
    return lambda: lib.fft.irfft(x, n=4096)


@workload("fft_c2c_64x2048", "fft")
def fft_c2c_64x2048(lib):
    x = lib.view_as_complex(_arr(lib, (64, 2048, 2)))
    return lambda: lib.fft.fft(x)


@workload("rfft_1024x256", "fft")
def rfft_1024x256(lib):
    x = _arr(lib, (1024, 256))
    return lambda: lib.fft.rfft(x)


@workload("rfft_8x65536", "fft")
def rfft_8x65536(lib):
    x = _arr(lib, (8, 65536))
    return lambda: lib.fft.rfft(x)


@workload("rfft_1x4096", "fft")
def rfft_1x4096(lib):
    x = _arr(lib, (1, 4096))
    return lambda: lib.fft.rfft(x)
