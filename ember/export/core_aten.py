"""The names of torch's Core ATen operator set (the operators torch tags ``core``).

``default_decompositions()`` keeps an ember op whose name is in this set and decomposes
the others, so ``run_decompositions()`` gives the graph a backend written against Core
ATen expects: ``conv2d`` becomes ``convolution``, ``layer_norm`` its primitives, while
``relu`` or ``_softmax`` stay whole.  Functionalised forms of core operators that
torch's core graphs contain (``_native_batch_norm_legit_functional``) count as core.
"""

__all__ = ["CORE_ATEN"]

CORE_ATEN = frozenset("""
_adaptive_avg_pool2d _adaptive_avg_pool2d_backward _adaptive_avg_pool3d _cdist_forward
_embedding_bag _fft_c2r _fft_r2c _local_scalar_dense _log_softmax _native_batch_norm_legit
_native_batch_norm_legit_functional _native_batch_norm_legit_no_training _pdist_forward
_softmax _to_copy abs acos acosh add addmm alias amax amin any arange argmax argmin
as_strided asin asinh atan atan2 atanh avg_pool2d avg_pool2d_backward avg_pool3d
bitwise_and bitwise_not bitwise_or bitwise_xor bmm cat ceil clamp clone col2im
constant_pad_nd convolution convolution_backward copy cos cosh cumsum diagonal div elu
embedding embedding_dense_backward empty empty_strided eq erf exp expand expm1 fill flip
floor fmod full full_like gather ge gelu grid_sampler_2d gt hardtanh index index_put
index_select isinf isnan le leaky_relu log log10 log1p log2 logical_and logical_not
logical_or logical_xor lt masked_scatter max max_pool2d_with_indices
max_pool2d_with_indices_backward max_pool3d_with_indices maximum mean min minimum mm mul
native_dropout native_group_norm native_group_norm_backward native_layer_norm
native_layer_norm_backward ne neg nonzero permute pow prod rand randn randperm reciprocal
reflection_pad1d reflection_pad2d reflection_pad3d relu remainder repeat replication_pad2d
replication_pad3d round rsqrt scalar_tensor scatter scatter_add scatter_reduce select
select_scatter sigmoid sign sin sinh slice slice_scatter sort split_with_sizes sqrt
squeeze sub sum sym_numel sym_size sym_storage_offset sym_stride tan tanh topk trunc
unsqueeze upsample_bilinear2d upsample_nearest2d var view where
""".split())
