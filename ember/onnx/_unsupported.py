"""Why each primitive without an ONNX lowering has none: the reason `UnsupportedOperatorError`
gives when a graph holds one (a test checks every primitive is lowered or listed here)."""
from ..ops.primitives import EXTERN

__all__ = ["UNSUPPORTED", "reason_of"]

_SPECIAL = "a special function ONNX has no operator for"
_LAPACK = "a LAPACK routine ONNX has no operator for"
_DATA = "its output shape depends on the values, and ONNX has no operator computing it"

UNSUPPORTED = {
    **{n: _SPECIAL for n in (
        "polygamma", "special_zeta", "special_gammainc",
        "special_gammaincc", "standard_gamma_grad", "special_airy_ai", "special_bessel_j0",
        "special_bessel_j1", "special_bessel_y0", "special_bessel_y1", "special_erfcx",
        "special_i0", "special_i0e", "special_i1", "special_i1e", "special_log_ndtr",
        "special_modified_bessel_i0", "special_modified_bessel_i1",
        "special_modified_bessel_k0", "special_modified_bessel_k1", "special_ndtri",
        "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1")},
    **{n: "an orthogonal polynomial with a per-element degree (a recurrence of data-dependent "
          "length), which ONNX cannot express without loops" for n in (
        "special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
        "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
        "special_shifted_chebyshev_polynomial_t", "special_shifted_chebyshev_polynomial_u",
        "special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_w",
        "special_hermite_polynomial_h", "special_hermite_polynomial_he",
        "special_laguerre_polynomial_l", "special_legendre_polynomial_p")},
    "gcd": "Euclid's algorithm runs a data-dependent number of steps per element",
    "lcm": "Euclid's algorithm runs a data-dependent number of steps per element",
    "nextafter": "ONNX has no operator on the bits of a float",
    "view_dtype": "ONNX has no bit reinterpretation of a tensor",
    "as_strided": "it reads the storage layout (strides), which ONNX tensors do not have",
    "_rng_uniform": "ember's counter-based random stream cannot be reproduced by ONNX's "
                    "random operators (export the model in eval mode, where dropout is off)",
    **{n: "complex tensors: ONNX Runtime computes almost no operator on them" for n in (
        "complex", "imag", "view_as_real", "view_as_complex")},
    **{n: _DATA for n in ("unique", "unique_consecutive", "bincount", "histogram")},
    **{n: "ONNX's DFT is not lowered here (complex outputs)" for n in (
        "_fft_c2c", "_fft_r2c", "_fft_c2r")},
}
UNSUPPORTED.update({n: _LAPACK for n in EXTERN if n.startswith("linalg_") or n in (
    "cholesky_solve", "_lu_pivots_to_perm") if n not in ("linalg_det",)})


def reason_of(name):
    return UNSUPPORTED.get(name)
