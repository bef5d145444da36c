# ruff: noqa: E501  (the category patterns are long regular expressions)
"""Regenerate ``api_exclusions.txt`` from what the API-surface test finds missing now.

    .venv/bin/python tests/compat/regen_api_exclusions.py

Runs ``test_api_surface.py`` with an empty exclusions file, then writes one entry per
name still missing or incompatible: an entry's existing reason is kept, a new name gets
the reason of the first pattern below that matches it (or "not yet implemented").  Stale
entries (names ember now has) disappear.  Review the diff before committing it.
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "api_exclusions.txt")
HEADER = """# Exclusions for tests/compat/test_api_surface.py: one entry a line, "PATTERN: REASON".
# PATTERN is a torch dotted name or an fnmatch pattern ("torch.cudnn_*"); "sig PATTERN"
# excuses only the signature check of a name that exists.  Entries naming a later issue
# are removed when that issue lands (tests/compat/regen_api_exclusions.py rewrites this file).
# NotImplementedError kept on purpose: DTensor.redistribute onto another DeviceMesh (torch
# raises the same NotImplementedError, "Cross device mesh comm not supported yet!") (issue 14).
# NotImplementedError kept on purpose in ember.library (issue 16): a custom op that mutates a
# non-Tensor argument, returns something other than Tensor(s) or returns nothing without
# mutating (an ember Op needs tensor outputs); register_vmap on a mutating op; Library.impl
# for an aten built-in (ember's built-ins are not dispatch tables), for dispatch keys other
# than CPU/CUDA/Meta/Composite*, or with_keyset=True (no key sets).  Torch's own
# NotImplementedErrors are mirrored, not stubs: fallthrough_kernel(), a custom op with no
# kernel, MinMaxObserver with a per-channel qscheme, a dtype torch's CPU kernel refuses
# ("ctc_loss_cpu"/"<pool>_out_frame"/"linspace_cpu"/"aminmax_cpu"/"histogramdd"/
# "slow_conv"/"rrelu_with_noise_out_cpu"/"bernoulli_scalar_cpu_" not
# implemented for '<dtype>'), geqrf's missing derivative, assigning to an orthogonal
# parametrization with the matrix exponential, and autograd.Function.vmap without a rule.
# NotImplementedError kept on purpose, with its reason in the message (issue 16):
# utils.benchmark.Timer(language="cpp") (ember has no C++ frontend to time statements in).
# On the meta device (issue 16): value reads ("Cannot copy out of meta tensor; no data!"),
# value-dependent ops (nonzero and friends) and reading a meta storage's bytes raise torch's
# own NotImplementedErrors. export: draft_export's apply_suggested_fixes and saving a pytree class
# registered without serialized_type_name raise torch 2.13's own NotImplementedErrors, as do
# loading a program whose pytree spec names a class the loading process has not registered,
# and utils._pytree.treespec_dumps of a class without a serialization name.
# NotImplementedError kept on purpose: tensors of dtype complex32/chalf (creating, casting,
# .chalf()): NumPy has no complex type made of two float16s.  The dtype object itself is
# torch's (identity, promotion, finfo, pickling), because libraries compare dtypes with it.
"""

RULES = [
 (r"^torch\.(cudnn_|miopen_|mkldnn_|fbgemm_|_?nnpack)|^torch\.backends\.(miopen|nnpack|kleidiai|cusparselt|mha|python_native)$|^torch\.Tensor\.(is_mkldnn|to_mkldnn)$|cudnn_is_acceptable", "vendor kernel library ember does not use (cuDNN/MIOpen/oneDNN/FBGEMM/NNPACK/KleidiAI/cuSPARSELt)"),
 (r"^torch\.(Script|Code$|CompilationUnit|ConcreteModuleType|FileCheck|Graph$|GraphExecutorState|Block$|Node$|Value$|Use$|Type$|TensorType|.*Type$|ArgumentSpec|CompleteArgumentSpec|AliasDb|import_ir_module|parse_ir|parse_schema|parse_type_comment|merge_type_from_type_comment|unify_type_list|ErrorReport|FunctionSchema|Argument$|InferredType|LiteScriptModule|ExecutionPlan|Gradient$|IODescriptor|TracingState|CallStack|JITException|StaticModule|BenchmarkConfig|BenchmarkExecutionStats|ThroughputBenchmark|LockingLogger|NoopLogger|AggregationType|PyTorchFileReader|PyTorchFileWriter|ScriptModuleSerializer|DeserializationStorageContext|SerializationStorageContext|DeepCopyMemoTable|OperatorInfo|Tag$|DispatchKey|ExcludeDispatchKeyGuard|Capsule|cpp$|fork$|wait$|Future$|AVG$|SUM$|Event$|Stream$|import_)|^torch\.testing\.FileCheck$|^torch\.utils\.(ThroughputBenchmark|throughput_benchmark|cpp_backtrace|get_cpp_backtrace)$", "TorchScript / C++ runtime internal (torch._C): no Python-level meaning in ember"),
 (r"quantiz|^torch\.(q_|qint|quint|qscheme|int_repr|dequantize|fake_quantize|choose_qparams|fused_moving_avg)|^torch\.Tensor\.(q_|qscheme|int_repr|dequantize)|^torch\.nn\.(qat|quantizable|quantized|intrinsic)$|^torch\.backends\.quantized$", "quantization: the later quantization issue (ember.ao.quantization)"),
 (r"^torch\.fx\.Graph\.create_(size|storage_offset|stride)_node$", "not in ember.fx.Graph: no ember pass emits size/stride nodes (ember.compile renders symbolic sizes into shape params); ember.ops.aten has sym_size/sym_stride but no sym_storage_offset"),
 (r"^torch\.fx\.Graph\.materialize_symints?$", "rebuilds a SymInt's sympy expression as FX nodes from the producers of its symbols (torch's ShapeEnv); ember's SymInts are expression trees over argument dims that ember.compile renders into shape params, with no ShapeEnv to resolve symbols against"),
 (r"^torch\.autograd\.graph\.region_activation_memory_budget$", "sets the activation-memory budget read by torch.compile's min-cut partitioner (save vs recompute); ember.compile's partitioner (_dynamo/aot_autograd._partition) saves every forward value the backward reads and has no recompute choice to budget"),
 (r"^torch\.(sym_|Sym|compile$|export$|cond$)|^torch\.nn\.Module\.compile$|^torch\.fx\.GraphModule\.compile$", "compile/export/dynamic shapes: the later compile and export issues"),
 (r"sparse_(csr|csc|bsr|bsc|compressed)|crow_indices|ccol_indices|col_indices|row_indices|to_sparse_(csr|csc|bsr|bsc)|is_sparse_csr|^torch\.(hspmm|sspaddmm|dsmm|hsmm|saddmm)$|^torch\.Tensor\.(sspaddmm|sparse_mask|sparse_resize_|sparse_resize_and_clear_|resize_as_sparse_)$|^torch\.resize_as_sparse_$|^torch\.sparse\.|values_copy|indices_copy", "sparse beyond COO (CSR/CSC/BSR, semi-structured, sparse masks): the later sparsity issue"),
 (r"^torch\.distributed|RRefType", "issue 13: distributed (in progress)"),
 (r"^torch\.multiprocessing|^torch\.nn\.parallel", "issue 13/16: multiprocessing and nn.parallel (distributed helpers, in progress)"),
 (r"^torch\.cuda\.", "CUDA runtime API: ember has no CUDA build (a CuPy backend registers at run time); torch.cuda names programs call on CPU machines exist"),
 (r"^torch\.backends\.cuda\.|^torch\.backends\.mps\.get_", "CUDA/MPS backend introspection: no such device in ember"),
 (r"^torch\.(bits|int[1-7]$|uint[1-7]$|float4|float8_e4m3fnuz|float8_e5m2fnuz|float8_e8m0fnu|complex32)", "sub-byte / exotic dtype ember does not implement (torch itself only creates, fills and converts these on CPU; complex32 arithmetic is experimental in torch)"),
 (r"^torch\.Tensor\.(eig|lstsq|symeig|solve|reinforce|volatile)$", "removed from torch (raises a removal error in torch too)"),
]
DEFAULT = "issue 16: not yet implemented"


def _existing():
    reasons = {}
    if os.path.exists(PATH):
        for line in open(PATH):
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, reason = line.partition(": ")
                reasons[name] = reason
    return reasons


def main():
    old = _existing()
    with open(PATH, "w") as f:
        f.write(HEADER)
    r = subprocess.run([sys.executable, "-m", "pytest", os.path.join(HERE, "test_api_surface.py"),
                        "-q", "-p", "no:cacheprovider", "-k", "namespace or class_members"],
                       capture_output=True, text=True)
    probs = set()
    for line in r.stdout.splitlines():
        line = re.sub(r"^E\s+(Failed: )?", "", line)
        if line.startswith("torch") and re.search(r": (missing|signature|no importable)", line):
            probs.add(line)
    names, sigs = {}, {}
    for line in sorted(probs):
        name, kind, rest = (line.split(": ", 2) + [""])[:3]
        if kind.startswith("signature"):
            sigs[name] = old.get("sig " + name) or \
                "issue 16: signature differs from torch's (to align): " + rest.split(" (torch")[0]
        else:
            names[name] = old.get(name) or next((why for pat, why in RULES if re.search(pat, name)),
                                                DEFAULT)
    groups = defaultdict(list)
    for n, why in names.items():
        groups[why].append(n)
    lines = [HEADER.rstrip("\n")]
    for why, ns in sorted(groups.items(), key=lambda kv: (kv[0].startswith(DEFAULT), kv[0])):
        lines += ["", "# ---- " + why] + [f"{n}: {why}" for n in sorted(ns)]
    lines += ["", "# ---- signatures"] + [f"sig {n}: {why}" for n, why in sorted(sigs.items())]
    with open(PATH, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(names)} names and {len(sigs)} signatures excluded; wrote {PATH}")


if __name__ == "__main__":
    main()
