"""Where ember differs from torch on the fuzzer's inputs: one table, a reason for each.

``DEVIATIONS`` are deliberate: ember behaves differently on purpose, for the reason given.
``KNOWN_GAPS`` are open defects the fuzzer found and nobody has fixed yet; they are listed
so CI stays green while they are visible (the run's summary counts them per entry).
Remove an entry once it is fixed: an entry that never matches costs nothing, but an
undocumented mismatch fails its test.

An entry is (family, op regex, class, detail regex, reason): ``family`` is one fuzz family
(or None for any), the op regex must match the op name fully, the class is one of
fuzz_core.CLASSES, and the detail regex (or None) is searched in "detail | case".
``numpy_exc`` is never documented: no NumPy exception may reach the user.
"""
import re

_EMPTY_BATCH = r"'x': '<\w+\[0,"
_NONFINITE = r"(NaN positions|infinities) differ"
_SPECIALS = r"'specials': 0\.[1-9]"

DEVIATIONS = [
    ("ops", r"(op_)?(r?sub|subtract)(_method)?", "value", r"NaN positions differ",
     "complex subtraction with an infinite operand: torch computes a - b as a + (-1)*b, whose "
     "complex product turns 0*inf into NaN (1 - (inf+0j) gives -inf+nanj); ember subtracts "
     "componentwise, the IEEE result (-inf+0j)"),
    ("ops", r"(op_)?add(_promote|_inplace|_method)?", "value",
     r"(?s)NaN positions differ.*complex",
     "complex addition with an infinite or NaN part: torch computes a + b as a + 1*b, whose "
     "complex product turns 0*inf and 0*nan into NaN in the other part (2 + (0+nanj) gives "
     "nan+nanj); ember adds componentwise, the IEEE result (2+nanj)"),
    ("ops", r"polygamma_(1|inplace)", "value", r"infinities differ",
     "trigamma at its poles (0, -1, -2, ...): torch's reflection formula divides by a "
     "rounded sin(pi x) and returns a huge finite number (6.6e32 at -1); ember returns inf"),
    ("ops", r"special\..*_polynomial_.*", "value", r"NaN positions differ",
     "a NaN x: torch's CPU polynomial kernels return a finite value unrelated to the input "
     "for some elements (chebyshev_polynomial_w([nan, 0.3], 4)[0] is 1e-10, or the previous "
     "element's result), a torch bug; ember returns NaN"),
    ("nn", r"conv(_transpose)?[123]d", "rejected", _EMPTY_BATCH,
     "torch skips its dtype and geometry checks (integer/complex inputs, dilation 0) when "
     "the batch is empty and returns an empty result; ember validates the arguments of "
     "every call, whatever the batch size"),
    (None, r"getitem|setitem", "accepted|exc_type|rejected", r"(?s)'ellipsis'.*'ellipsis'",
     "a second Ellipsis: torch accepts some and raises an out-of-range IndexError for others "
     "(it expands both); ember expands the second to no dimensions, consistently"),
    (None, r"getitem|setitem", "rejected", r"out of bounds",
     "ember bounds-checks index tensors even when the indexed region is empty; torch skips "
     "the check when no element is written"),
    ("ops", r"nn\.functional\.ctc_loss", "value", r"'layout': 'step'",
     "1-d (concatenated) targets that are not contiguous: torch's CPU kernel misreads them "
     "(the same values contiguous give torch another loss, ember's); ember computes the loss "
     "of the values"),
    ("ops", r"nn\.functional\.ctc_loss", "rejected", r"out of the class range",
     "a target outside [0, C): torch's CPU kernel reads log_probs out of bounds and returns "
     "garbage, NaN or inf; ember raises IndexError"),
    ("ops", r"linalg\.(svd|svdvals|matrix_norm|norm|pinv|matrix_rank|cond)", "accepted",
     r"non-finite values|ill-conditioned",
     "a NaN entry: torch raises LinAlgError after LAPACK; ember gives NaN factors without "
     "calling LAPACK, whose gesdd can loop forever on NaN/inf input (and huge entries: "
     "MKL's gesdd may fail to converge where NumPy's LAPACK returns)"),
    ("nn", r"conv(_transpose)?[123]d", "value", r"(?s)NaN positions differ.*'dtype': 'complex"
     r".*'huge': True",
     "complex inputs near the float maximum (3.4e38 in complex64): products overflow, and "
     "torch's complex multiply-add turns inf - inf and 0 * inf into NaN in both parts where "
     "NumPy's BLAS keeps an infinite real part (-inf+nanj); both are overflow artifacts"),
    ("nn", r"conv(_transpose)?[123]d", "value", r"(NaN positions|infinities) differ.*'huge': True",
     "inputs near the float maximum: a sum of products that overflow to +inf and -inf is inf "
     "or NaN depending on the order of the additions (torch's kernels accumulate in another "
     "order than ember's GEMM)"),
    ("nn", r"binary_cross_entropy_with_logits", "value",
     r"infinities differ.*'reduction': 'sum'.*'huge': True",
     "logits near the float maximum with reduction='sum': the terms' sum overflows to inf or "
     "stays finite depending on the order of the additions (torch's reduction tree vs NumPy's "
     "pairwise sum)"),
    ("nn", r"(adaptive_)?avg_pool[123]d", "value", r"'huge': True",
     "windows holding values near the float maximum (+1.8e308 and -1.8e308 in one window): "
     "the sum's rounding depends on the order of the additions (torch adds in window order, "
     "ember by dimension), so the small values that survive the cancellation differ"),
    ("ops", r"linalg\.cond", "value", r"value np\.float64\([0-9.]+e\+(1[6-9]|[2-9]\d|\d{3})",
     "deviation: the condition number of a singular matrix (salted integers, bools): both "
     "results are 1/(a smallest singular value at rounding level), noise of 1e16 and above"),
    ("ops", r"kthvalue", "value", None,
     "ties (values cast to bool or a small dtype): the k-th value agrees, but which of the "
     "equal elements' indices torch returns comes from the pivots of its quickselect; ember "
     "returns the index a stable sort gives (the op database's samples, without ties, "
     "compare the indices exactly)"),
    ("factories", r"eye", "accepted|exc_type", r"NoneType",
     "ember accepts eye(n, None) as a square matrix (None is the documented default of m); "
     "torch's overloads refuse an explicit None"),
    ("ops", r"(linalg\..*|fft\..*|stft.*|istft|cov|corrcoef|matrix_power|matmul|mm|bmm|"
            r"trapezoid|trapz|cumulative_trapezoid|std_mean|var_mean|std|var|"
            r"cholesky.*|lu.*|qr.*|svd.*|pinv.*|det|logdet|slogdet|einsum|tensordot|kron|"
            r"complex\..*|inner|outer|addmm|addbmm|baddbmm|addmv|addr|mv|dot|vdot|"
            r"chain_matmul|nn\.functional\.conv.*|convolution)",
     "value", f"{_NONFINITE}|{_SPECIALS}",
     "non-finite or extreme inputs to BLAS/LAPACK/FFT: NumPy's libraries propagate NaN and "
     "inf through other elements than torch's MKL/pocketfft paths, and huge/tiny entries make "
     "matrices so ill-conditioned that both results are rounding noise (results on ordinary "
     "finite inputs agree within tolerance)"),
]

KNOWN_GAPS = [
    ("setitem", r"setitem", "accepted", r"without overflow.*'tensor'",
     "writing a complex tensor with a non-zero imaginary part into an integer tensor through "
     "a mask: torch raises its overflow error, ember drops the imaginary part"),
    ("factories", r"arange", "value", None,
     "arange with a fractional step into a small integer dtype: torch computes the values in "
     "the integer dtype (wrapping), ember in double before the cast"),
    ("factories", r"full", "rejected", r"without overflow",
     "full(): torch's overflow check of the fill value depends on how the dtype was given; "
     "ember always checks it"),
    ("nn", r"conv_transpose[123]d", "rejected", r"dilation",
     "conv_transpose with dilation 0: torch computes a (degenerate) result, ember rejects it"),
    ("nn", r"cross_entropy|nll_loss", "value", r"-100",
     "every target ignored: torch's mean reduction and its gradient give NaN in other "
     "places than ember's"),
    ("factories", r"arange", "accepted", r"Bool",
     "arange with dtype=bool: torch has no bool arange kernel"),
    ("ops", r"linalg\.cholesky.*|fft\..*|linalg\.slogdet", "value", None,
     "near-singular matrices (bool/int casts) and integer FFT inputs with extreme values: "
     "LAPACK/pocketfft rounding differs from torch's"),
    ("factories", r"randn", "rejected", r"not implemented",
     "randn with an integer/bool dtype and an empty size: torch returns the empty tensor "
     "without looking at the dtype"),
    ("nn", r"adaptive_avg_pool[123]d", "accepted|dtype", _EMPTY_BATCH,
     "empty integer/bool input: torch's checks depend on dim and output size (mean() or "
     "kernel dtype errors, or an empty result of the input dtype); ember returns an empty "
     "result of the input dtype"),
    ("nn", r"(log_)?softmax", "dtype", None,
     "empty integer input: torch returns an empty tensor of the integer dtype, ember of the "
     "default float dtype"),
    ("factories", r"linspace", "value|accepted", None,
     "linspace: torch fills integer dtypes by rounding from both ends and rejects bool; "
     "float results can differ by an ulp (torch steps from both ends)"),
    ("factories", r"arange", "accepted", r"Complex",
     "arange with a complex dtype: torch has no complex arange kernel"),
    ("factories", r"tensor", "exc_type", r"Overflow",
     "tensor() of a Python int beyond int64: OverflowError where torch raises ValueError"),
    ("factories", r"full", "exc_type", r"unpack",
     "full() checks the fill value before the size; torch rejects an oversized size first"),
    ("setitem", r"setitem", "value", r"1j",
     "writing a complex scalar into a bool tensor drops the imaginary part before the cast"),
    ("setitem", r"setitem", "accepted", r"uint8",
     "a uint8 index next to None on an empty tensor: torch routes it to masked_fill_ and "
     "rejects the uint8 mask"),
    ("setitem", r"setitem", "rejected", r"\('bool', False\)",
     "known gap: a False mask selects nothing; torch skips the value's shape check for the "
     "empty target, ember's index_put checks it and rejects a value that cannot broadcast"),
    ("setitem", r"setitem", "exc_type", r"index -\d+ is out of bounds",
     "known gap: a list index with an out-of-range negative entry and a value of the wrong "
     "shape: torch reports the value's shape first (RuntimeError), ember the index "
     "(IndexError)"),
    ("ops", r"lerp|cov|corrcoef|kron|unique_consecutive|histogram|linalg\.vecdot|trapz|"
            r"trapezoid|cholesky_solve|linalg\.matrix_norm|bucketize|searchsorted",
     "accepted", None,
     "dtype or mixed-dtype checks torch performs that ember's composite does not yet (bool "
     "inputs, mismatched dtypes, non-finite matrices for LAPACK)"),
    ("ops", r"searchsorted|bucketize", "value", r"'specials': 0\.(5|15)",
     "deviation: a boundaries sequence salted with NaN/inf is no longer sorted, where torch "
     "documents the result as undefined: the two binary searches take different paths"),
    ("ops", r"float_power|reciprocal_method|pow(_out)?|complex\..*", "value|dtype", None,
     "complex edge values (0 or inf to a complex power, reciprocal of complex inf/NaN) and "
     "the result dtype of abs() of a half sum differ from torch's"),
    (None, r"(nn\.functional\.)?(batch|layer|group|instance)_norm", "value",
     f"(?s)({_NONFINITE}|value ).*{_SPECIALS}",
     "an infinite entry, or one whose square overflows (1e30 in float32): the variance is "
     "inf or NaN and the statistics are artifacts in both libraries (torch's row of NaN, "
     "ember's rstd of 0 giving the bias, or inf - inf in other places); torch's eval "
     "batch_norm computes x * scale + shift, so x = mean = 1e30 leaves 1.9e22 where ember's "
     "(x - mean) * scale gives 0"),
    ("ops", r"_standard_gamma_grad", "value", _SPECIALS,
     "huge or tiny alpha or x (1e30, 1.8e308, 5e-324): ember differentiates the regularised "
     "incomplete gamma function numerically (float64), torch evaluates series and rational "
     "approximations; they agree to ~1e-4 on ordinary inputs, at the extremes one gives "
     "0 where the other gives NaN or a small number"),
    ("ops", r"index_put_?|einsum|matrix_exp|linalg\.solve_triangular", "rejected", None,
     "mixed-dtype arguments torch accepts (a 0-dim value of another dtype for index_put, "
     "mixed int/complex einsum, half matrix_exp, mixed-dtype solve_triangular)"),
]


def find_deviation(family, op, cls, detail, desc):
    """The documented reason for this mismatch (prefixed by its kind), or None."""
    text = f"{detail} | {desc}"
    for kind, table in (("deviation", DEVIATIONS), ("known gap", KNOWN_GAPS)):
        for fam, op_re, c, det_re, reason in table:
            if not re.fullmatch(c, cls) or (fam is not None and fam != family):
                continue
            if not re.fullmatch(op_re, op):
                continue
            if det_re is not None and not re.search(det_re, text):
                continue
            return f"{kind}: {reason}"
    return None


KNOWN_GAPS += [
    ("ops", r"index_reduce", "exc_type", r"not implemented for \\?'Bool",
     "a bool input and an out-of-range index: torch reports the dtype "
     "(NotImplementedError), ember the index (IndexError)"),
    ("ops", r"index_add", "exc_type", r"out of bounds for dimension",
     "an out-of-range index: torch raises IndexError or RuntimeError depending on the "
     "tensor's rank and the dim (its kernels differ); ember always raises IndexError"),
    ("ops", r"nn\.functional\.cross_entropy", "accepted", r"expected scalar type",
     "a class weight of another dtype than the input: torch refuses it "
     "('expected scalar type Double but found Bool'), ember promotes it"),
]
