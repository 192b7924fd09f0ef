"""kvflash: decode attention (IncreFlashAttention) and DeepSeek-V3.2 sparse MLA attention
(SparseFlashAttention) as PyTorch operators on ordinary CPU tensors, with torch_npu's signatures.

    import kvflash
    out = kvflash.npu_incre_flash_attention(q, k, v, num_heads=32, input_layout="BNSD")

The operators are registered in C++ as ``torch.ops.kvflash.*`` (CPU kernels and fake kernels for
torch.compile / torch.export); nothing is computed in Python. The functions here call them, after
turning a length tensor given for a host length list (``SymInt[]``) into that list, as torch_npu
callers such as vllm-ascend pass it. ``kvflash.torch_npu`` exposes them under torch_npu's names.
See docs/python.md.
"""
import os as _os

import torch as _torch

from . import _build_info

__version__ = _build_info.VERSION
__all__ = ["npu_incre_flash_attention", "npu_sparse_flash_attention", "incre_flash_attention"]
__all__ += ["npu_lightning_indexer", "lightning_indexer_scores"]


def _release(version):
    return version.split("+")[0]


if _release(_torch.__version__) != _release(_build_info.TORCH_VERSION):
    raise ImportError(
        f"kvflash {__version__} was built against torch {_build_info.TORCH_VERSION} but this is "
        f"torch {_torch.__version__}; torch's C++ ABI changes between releases: rebuild kvflash "
        f"against this torch (pip install --no-build-isolation <kvflash source>)")

_torch.ops.load_library(_os.path.join(_os.path.dirname(__file__), "lib", "libkvflash_torch.so"))


def set_thread_pool(pool):
    """Chooses the threads that run the operators' parallel loops, for every later call in the
    process (like ``torch.set_num_threads``):

    - ``"kvflash"`` (the default): kvflash's own worker pool. Idle workers sleep, so a call on a
      machine whose cores are shared costs its own work and no more.
    - ``"torch"``: torch's intra-op pool (``at::parallel_for``), whose idle workers spin; as fast
      on a quiet machine, much slower when another process takes a core (docs/python.md).

    Either pool runs a call on ``torch.get_num_threads()`` threads (one, inside a torch parallel
    region), and the results are the same bits for any pool and thread count. The environment
    variable ``KVFLASH_THREAD_POOL`` sets the pool when kvflash is imported. Any other name is a
    ValueError.
    """
    if not isinstance(pool, str):
        raise ValueError(f"kvflash.set_thread_pool: the pool must be \"kvflash\" or \"torch\", "
                         f"got {pool!r}")
    _torch.ops.kvflash._set_thread_pool(pool)


def get_thread_pool():
    """The pool the operators run on: ``"kvflash"`` or ``"torch"`` (``set_thread_pool``)."""
    return _torch.ops.kvflash._thread_pool()


__all__ += ["set_thread_pool", "get_thread_pool"]

if "KVFLASH_THREAD_POOL" in _os.environ:
    try:
        set_thread_pool(_os.environ["KVFLASH_THREAD_POOL"])
    except ValueError as _e:
        raise ValueError(f"KVFLASH_THREAD_POOL: {_e}") from None



def _host_lengths(value, name, op):
    """A host length list as the operators' ``SymInt[]?`` arguments take it.

    None and a list or tuple are returned as given (the operator checks the entries, and under
    torch.compile they may be symbolic). A 1-D integer CPU tensor becomes the list of its values:
    torch's argument parser cannot take a tensor for ``SymInt[]`` (it fails an internal assert),
    and vllm-ascend passes its length metadata as tensors. Anything else is a ValueError naming
    the argument.
    """
    if value is None or isinstance(value, (list, tuple)):
        return value
    what = type(value).__name__
    if isinstance(value, _torch.Tensor):
        dt = value.dtype
        if value.dim() == 1 and value.device.type == "cpu" and dt != _torch.bool and \
                not dt.is_floating_point and not dt.is_complex:
            return value.tolist()
        what = f"a {value.dim()}-D {str(dt).replace('torch.', '')} tensor on {value.device}"
    raise ValueError(f"[{op}] {name} must be a list of ints or a 1-D integer CPU tensor, got "
                     f"{what}")


def npu_incre_flash_attention(query, key, value, *, actual_seq_lengths=None, **kwargs):
    """torch_npu.npu_incre_flash_attention (``torch.ops.kvflash.npu_incre_flash_attention``, with
    torch_npu's schema and defaults): returns attention_out (the query's shape; int8 with
    quant_scale2). ``actual_seq_lengths`` may also be a 1-D integer CPU tensor."""
    return _torch.ops.kvflash.npu_incre_flash_attention(
        query, key, value, actual_seq_lengths=_host_lengths(
            actual_seq_lengths, "actual_seq_lengths", "npu_incre_flash_attention"), **kwargs)


#: torch_npu.npu_sparse_flash_attention: returns (attention_out, softmax_max, softmax_sum). Its
#: lengths are tensors in torch_npu's schema already.
npu_sparse_flash_attention = _torch.ops.kvflash.npu_sparse_flash_attention

#: torch_npu.npu_lightning_indexer: returns (sparse_indices, sparse_values); its lengths are int32
#: tensors (docs/python.md).
npu_lightning_indexer = _torch.ops.kvflash.npu_lightning_indexer

#: kvflash's lightning_indexer_scores: npu_lightning_indexer's arguments but return_value;
#: returns (sparse_indices, scores), the scores in fp32 (what kvflash.distributed's sharded
#: indexer merges; docs/python.md).
lightning_indexer_scores = _torch.ops.kvflash.lightning_indexer_scores


def _tensor_list(x):
    """A tensor as a list of one, a tuple as a list; anything else as given, so that the
    operator's schema check reports it by the argument's name."""
    if isinstance(x, _torch.Tensor):
        return [x]
    return list(x) if isinstance(x, tuple) else x


def incre_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None,
                          actual_seq_lengths=None, antiquant_scale=None, antiquant_offset=None,
                          block_table=None, dequant_scale1=None, quant_scale1=None,
                          dequant_scale2=None, quant_scale2=None, quant_offset2=None,
                          kv_padding_size=None, num_heads=1, scale_value=1.0, input_layout="BSH",
                          num_key_value_heads=0, block_size=0, inner_precise=1,
                          return_softmax_lse=False, zero_fully_masked_rows=False):
    """IncreFlashAttention with kvflash's extensions (``torch.ops.kvflash.incre_flash_attention``).

    The arguments of ``npu_incre_flash_attention``, plus:

    - ``key`` / ``value`` may be a tensor or a list of tensors (one, or one per batch: the
      tensor-list form of aclnn, sequences of different lengths without padding);
    - ``return_softmax_lse``: also return the fp32 ``(B, N)`` natural-log softmax LSE of each
      (batch, head) (``-inf`` for rows with nothing to attend);
    - ``actual_seq_lengths`` may also be a 1-D integer CPU tensor (as for
      ``npu_incre_flash_attention``);
    - ``zero_fully_masked_rows``: a row whose every position is masked outputs zeros (and LSE
      ``-inf``) instead of the mean of V.

    Returns ``(attention_out, softmax_lse)``; ``softmax_lse`` is an empty ``[0]`` tensor unless
    ``return_softmax_lse``.
    """
    actual_seq_lengths = _host_lengths(actual_seq_lengths, "actual_seq_lengths",
                                       "incre_flash_attention")
    return _torch.ops.kvflash.incre_flash_attention(
        query, _tensor_list(key), _tensor_list(value), padding_mask=padding_mask, atten_mask=atten_mask,
        pse_shift=pse_shift, actual_seq_lengths=actual_seq_lengths,
        antiquant_scale=antiquant_scale, antiquant_offset=antiquant_offset,
        block_table=block_table, dequant_scale1=dequant_scale1, quant_scale1=quant_scale1,
        dequant_scale2=dequant_scale2, quant_scale2=quant_scale2, quant_offset2=quant_offset2,
        kv_padding_size=kv_padding_size, num_heads=num_heads, scale_value=scale_value,
        input_layout=input_layout, num_key_value_heads=num_key_value_heads,
        block_size=block_size, inner_precise=inner_precise,
        return_softmax_lse=return_softmax_lse, zero_fully_masked_rows=zero_fully_masked_rows)


# PromptFlashAttention / FusedInferAttentionScore (torch_npu's names; kvflash/_fia.py).
from ._fia import (  # noqa: E402
    _npu_fused_infer_attention_score_get_max_workspace,
    _npu_fused_infer_attention_score_v2_get_max_workspace, npu_fused_infer_attention_score,
    npu_fused_infer_attention_score_v2, npu_prompt_flash_attention)

__all__ += ["npu_prompt_flash_attention", "npu_fused_infer_attention_score",
            "npu_fused_infer_attention_score_v2"]
