"""What a stored node graph may call: a closed list of torch tensor operations, written out here.

A saved ``module.json`` names its call targets by string. Only the names listed below resolve,
each to the one function torch (or ``operator`` / ``math``) defines under it; nothing is looked up
by a name the file chose. Every entry computes on tensors or numbers and returns tensors or
numbers: none takes a callable, imports, reads or writes a file, reaches a Python object's
attributes or touches devices, storage, hooks or autograd state. A name missing from this torch
(an older version) does not resolve.

``TENSOR_METHODS`` are the ``call_method`` names: methods of ``torch.Tensor`` with the same
property. ``OPERATORS`` take numbers and nodes only, ``INDEXERS`` a node and an index (schema.py
types their arguments); ``MATH`` takes numbers and nodes only.
"""
from __future__ import annotations

from typing import Any, Callable

_TORCH = """
abs absolute acos acosh adaptive_avg_pool1d adaptive_max_pool1d add addbmm addcdiv addcmul addmm
addmv addr adjoint all allclose alpha_dropout amax amin aminmax angle any arange arccos arccosh
arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort argwhere as_tensor atan atan2 atanh
avg_pool1d baddbmm batch_norm bernoulli bilinear binary_cross_entropy_with_logits bincount
bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm
broadcast_to bucketize cat ceil celu channel_shuffle cholesky cholesky_inverse cholesky_solve chunk
clamp clamp_max clamp_min clip clone column_stack complex concat concatenate conj conj_physical
constant_pad_nd conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d
convolution copysign corrcoef cos cosh cosine_embedding_loss cosine_similarity count_nonzero cov
cross cummax cummin cumprod cumsum cumulative_trapezoid deg2rad dequantize det detach diag
diag_embed diagflat diagonal diagonal_scatter diff digamma dist div divide dot dropout dsplit dstack
embedding embedding_bag eq equal erf erfc erfinv exp exp2 expm1 eye
fake_quantize_per_channel_affine fake_quantize_per_tensor_affine feature_alpha_dropout
feature_dropout fix flatten flip fliplr flipud float_power floor floor_divide fmax fmin fmod frac
frexp frobenius_norm full full_like gather gcd ge ger gradient greater greater_equal
grid_sampler grid_sampler_2d grid_sampler_3d group_norm gru gru_cell gt hardshrink heaviside
hinge_embedding_loss histc hsplit hstack hypot i0 igamma igammac imag index_add index_copy
index_fill index_put index_reduce index_select inner instance_norm inverse is_complex
is_floating_point is_nonzero is_same_size isclose isfinite isin isinf isnan isneginf isposinf
isreal kl_div kron kthvalue layer_norm lcm ldexp le lerp less less_equal lgamma linspace log log10
log1p log2 log_softmax logaddexp logaddexp2 logcumsumexp logdet logical_and logical_not logical_or
logical_xor logit logspace logsumexp lstm lstm_cell lt lu_solve lu_unpack margin_ranking_loss
masked_fill masked_scatter masked_select matmul matrix_exp matrix_power max max_pool1d
max_pool1d_with_indices max_pool2d max_pool3d maximum mean median min minimum mode moveaxis movedim
msort mul multinomial multiply mv mvlgamma nan_to_num nanmean nanmedian nanquantile nansum narrow
narrow_copy native_batch_norm native_dropout native_group_norm native_layer_norm ne neg negative
nextafter nonzero norm_except_dim not_equal nuclear_norm numel ones ones_like outer pairwise_distance
pdist permute pinverse pixel_shuffle pixel_unshuffle poisson polar polygamma positive pow prelu
prod quantile quantize_per_channel quantize_per_tensor rad2deg rand rand_like randint randint_like
randn randn_like randperm ravel real reciprocal relu remainder renorm repeat_interleave reshape
resolve_conj resolve_neg rms_norm rnn_relu rnn_relu_cell rnn_tanh rnn_tanh_cell roll rot90 round
row_stack rrelu rsqrt rsub scalar_tensor scatter scatter_add scatter_reduce searchsorted select
select_scatter selu sgn sigmoid sign signbit sin sinc sinh slice_scatter slogdet softmax sort
split_with_sizes sqrt square squeeze stack std std_mean sub subtract sum svd swapaxes swapdims t
take take_along_dim tan tanh tensor tensor_split threshold tile topk trace transpose trapezoid trapz
triangular_solve tril tril_indices triplet_margin_loss triu triu_indices true_divide trunc unbind
unflatten unsafe_chunk unsafe_split unsqueeze var var_mean vdot view_as_complex view_as_real vsplit
vstack where xlogy zeros zeros_like
"""

_TORCH_FUNCTIONAL = """
atleast_1d atleast_2d atleast_3d block_diag broadcast_shapes broadcast_tensors cartesian_prod cdist
chain_matmul einsum meshgrid norm split stft tensordot unique unique_consecutive unravel_index
"""

_NN_FUNCTIONAL = """
adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool1d_with_indices
adaptive_max_pool2d adaptive_max_pool2d_with_indices adaptive_max_pool3d
adaptive_max_pool3d_with_indices affine_grid alpha_dropout avg_pool1d avg_pool2d avg_pool3d
batch_norm binary_cross_entropy binary_cross_entropy_with_logits celu conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d cosine_embedding_loss cosine_similarity
cross_entropy dropout dropout1d dropout2d dropout3d elu embedding embedding_bag
feature_alpha_dropout fold gaussian_nll_loss gelu glu grid_sample group_norm gumbel_softmax
hardshrink hardsigmoid hardswish hardtanh hinge_embedding_loss huber_loss instance_norm interpolate
kl_div l1_loss layer_norm leaky_relu linear local_response_norm log_softmax logsigmoid lp_pool1d
lp_pool2d lp_pool3d margin_ranking_loss max_pool1d max_pool1d_with_indices max_pool2d
max_pool2d_with_indices max_pool3d max_pool3d_with_indices max_unpool1d max_unpool2d max_unpool3d
mish mse_loss multi_margin_loss multilabel_margin_loss multilabel_soft_margin_loss nll_loss
normalize one_hot pad pairwise_distance pdist pixel_shuffle pixel_unshuffle poisson_nll_loss prelu
relu relu6 relu_ rms_norm rrelu selu sigmoid silu smooth_l1_loss soft_margin_loss softmax softmin
softplus softshrink softsign tanh tanhshrink threshold triplet_margin_loss unfold upsample
upsample_bilinear upsample_nearest
"""

_C_NN = """
avg_pool2d avg_pool3d elu gelu hardsigmoid hardswish hardtanh leaky_relu linear log_sigmoid
one_hot pad scaled_dot_product_attention silu softplus softshrink upsample_bilinear2d
upsample_nearest2d
"""

_LINALG = """
cholesky cholesky_ex cond cross det diagonal eig eigh eigvals eigvalsh householder_product inv
inv_ex lstsq lu lu_factor lu_factor_ex lu_solve matmul matrix_exp matrix_norm matrix_power
matrix_rank multi_dot norm pinv qr slogdet solve solve_ex solve_triangular svd svdvals tensorinv
tensorsolve vander vecdot vector_norm
"""

_FFT = """
fft fft2 fftn fftshift hfft hfft2 hfftn ifft ifft2 ifftn ifftshift ihfft ihfft2 ihfftn irfft
irfft2 irfftn rfft rfft2 rfftn
"""

_SPECIAL = """
digamma entr erf erfc erfcx erfinv exp2 expit expm1 gammainc gammaincc gammaln i0 i0e i1 i1e
log1p log_ndtr log_softmax logit logsumexp multigammaln ndtr ndtri polygamma psi round sinc
softmax xlog1py xlogy zeta
"""

TENSOR_METHODS = frozenset("""
abs abs_ absolute acos acosh add add_ addbmm addcdiv addcmul addmm addmv addr all allclose amax amin
aminmax angle any arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort
argwhere asin asinh atan atan2 atanh baddbmm bernoulli bfloat16 bincount bitwise_and bitwise_not
bitwise_or bitwise_xor bmm bool broadcast_to byte ceil ceil_ cfloat char chunk clamp clamp_
clamp_max clamp_min clip clip_ clone contiguous copy_ copysign cos cosh count_nonzero cpu cross
cummax cummin cumprod cumsum deg2rad det detach diag diag_embed diagonal diff digamma dim dist div
div_ divide dot double dsplit eq equal erf erfc erfinv exp exp2 exp_ expand expand_as expm1 fill_
fix flatten flip fliplr flipud float float_power floor floor_ floor_divide fmax fmin fmod frac gather
ge greater greater_equal gt half hardshrink heaviside hsplit hypot index_add index_add_ index_copy
index_copy_ index_fill index_fill_ index_put index_put_ index_select inner int inverse is_complex
is_contiguous is_floating_point isclose isfinite isinf isnan isneginf isposinf item kron kthvalue
le lerp less less_equal lgamma log log10 log1p log2 log_ log_softmax logaddexp logcumsumexp
logical_and logical_not logical_or logical_xor logit logsumexp long lt masked_fill masked_fill_
masked_scatter masked_select matmul matrix_power max maximum mean median min minimum mm mode
moveaxis movedim msort mul mul_ multiply mv nan_to_num nanmean nanmedian nanquantile nansum narrow
ndimension ne neg neg_ negative nelement nonzero norm not_equal numel outer permute pow pow_ prelu
prod put put_ quantile rad2deg ravel reciprocal relu relu_ remainder renorm repeat repeat_interleave
reshape reshape_as roll rot90 round rsqrt scatter scatter_ scatter_add scatter_add_ scatter_reduce
select select_scatter sgn short sigmoid sigmoid_ sign signbit sin sinh size slice_scatter softmax
sort split split_with_sizes sqrt square squeeze squeeze_ std sub sub_ subtract sum sum_to_size swapaxes
swapdims t take take_along_dim tan tanh tanh_ tensor_split tile to topk trace transpose tril triu
true_divide trunc type_as unbind unflatten unfold unique unique_consecutive unsqueeze unsqueeze_ var
vdot view view_as vsplit where xlogy zero_
__abs__ __add__ __and__ __div__ __eq__ __floordiv__ __ge__ __getitem__ __gt__ __invert__ __le__
__lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ __or__ __pos__ __pow__ __radd__ __rand__
__rdiv__ __rfloordiv__ __rlshift__ __rmatmul__ __rmod__ __rmul__ __ror__ __rpow__ __rrshift__
__rshift__ __rsub__ __rtruediv__ __rxor__ __setitem__ __sub__ __truediv__ __xor__
""".split())

#: operator functions on numbers and tensors: (name, how many positional arguments)
OPERATORS = {"add": 2, "sub": 2, "mul": 2, "truediv": 2, "floordiv": 2, "mod": 2, "pow": 2,
             "matmul": 2, "and_": 2, "or_": 2, "xor": 2, "lshift": 2, "rshift": 2, "lt": 2,
             "le": 2, "gt": 2, "ge": 2, "eq": 2, "ne": 2, "neg": 1, "pos": 1, "abs": 1,
             "invert": 1, "not_": 1, "truth": 1, "index": 1}
#: operator functions that index a node: (name, how many positional arguments)
INDEXERS = {"getitem": 2, "setitem": 3}
MATH = {"sqrt": 1, "exp": 1, "log": 1, "floor": 1, "ceil": 1, "trunc": 1, "fabs": 1, "sin": 1,
        "cos": 1, "tan": 1, "tanh": 1, "isfinite": 1, "isnan": 1, "isinf": 1}

_ROOTS = (("torch.", "torch", _TORCH), ("torch.functional.", "torch.functional", _TORCH_FUNCTIONAL),
          ("torch.nn.functional.", "torch.nn.functional", _NN_FUNCTIONAL),
          ("torch._C._nn.", "torch._C._nn", _C_NN), ("torch._C._linalg.linalg_", "torch.linalg", _LINALG),
          ("torch.linalg.", "torch.linalg", _LINALG), ("torch._C._fft.fft_", "torch.fft", _FFT),
          ("torch.fft.", "torch.fft", _FFT), ("torch._C._special.special_", "torch.special", _SPECIAL),
          ("torch.special.", "torch.special", _SPECIAL))

_TABLE: dict[str, Callable] | None = None


def _table() -> dict[str, Callable]:
    """{qualified name: function}, every name of the lists above that this torch defines. The
    names are ours, so looking them up is safe; the file's string is only ever a key here."""
    global _TABLE
    if _TABLE is None:
        import importlib
        import math
        import operator

        import torch
        table: dict[str, Callable] = {}
        for prefix, module, names in _ROOTS:
            mod = importlib.import_module(module)
            for n in names.split():
                fn = getattr(mod, n, None)
                if callable(fn) and not isinstance(fn, type):
                    table[prefix + n] = fn
        for m in TENSOR_METHODS:
            fn = getattr(torch.Tensor, m, None)
            if callable(fn):
                table["torch.Tensor." + m] = fn
        for n in (*OPERATORS, *INDEXERS):
            table["_operator." + n] = table["operator." + n] = getattr(operator, n)
        for n in MATH:
            table["math." + n] = getattr(math, n)
        _TABLE = table
    return _TABLE


def function(name: Any) -> Callable | None:
    """The function a stored ``call_function`` target names, or None when it is not in the list."""
    return _table().get(name) if isinstance(name, str) else None


def kind(name: str) -> str:
    """How schema.py types a listed target's arguments: "index", "operator", "math" or "torch"."""
    mod, _, short = name.rpartition(".")
    if mod in ("_operator", "operator"):
        return "index" if short in INDEXERS else "operator"
    return "math" if mod == "math" else "torch"


def arity(name: str) -> int | None:
    """The positional arguments an operator / math target takes (None: torch decides)."""
    mod, _, short = name.rpartition(".")
    return {**OPERATORS, **INDEXERS}.get(short) if mod in ("_operator", "operator") else \
        MATH.get(short) if mod == "math" else None
