"""The rest of vllm-ascend's attention path: the cache writes, ATB's paged attention,
FlashAttentionScore and the LSE update, under torch_npu's names (docs/python.md, "vllm-ascend's
attention path").

Each is its ``torch.ops.kvflash.*`` operator (torch_npu 2.14.0's schema); ``npu_fusion_attention``
also takes its host length lists (``actual_seq_qlen``, ``actual_seq_kvlen``, ``prefix``) as 1-D
integer CPU tensors, as the FIA functions do.
"""
import torch as _torch

from . import _host_lengths

#: torch_npu.npu_scatter_pa_kv_cache: writes key / value rows into the paged caches at
#: slot_mapping's slots, in place (cache_mode="Norm": the ND cache; its default "PA_NZ" is refused).
npu_scatter_pa_kv_cache = _torch.ops.kvflash.npu_scatter_pa_kv_cache
#: torch_npu._npu_reshape_and_cache (ATB's ReshapeAndCache): the same write, slot_indices.
_npu_reshape_and_cache = _torch.ops.kvflash._npu_reshape_and_cache
#: torch_npu._npu_paged_attention (ATB's PagedAttention decode): writes out in place.
_npu_paged_attention = _torch.ops.kvflash._npu_paged_attention
#: torch_npu._npu_paged_attention_get_workspace: the workspace _npu_paged_attention may be given.
_npu_paged_attention_get_workspace = _torch.ops.kvflash._npu_paged_attention_get_workspace
#: torch_npu.npu_attention_update: merges lists of partial outputs by their LSE.
npu_attention_update = _torch.ops.kvflash.npu_attention_update

_FA_LENGTHS = ("prefix", "actual_seq_qlen", "actual_seq_kvlen")


def npu_fusion_attention(*args, **kwargs):
    """torch_npu.npu_fusion_attention (``torch.ops.kvflash.npu_fusion_attention``): returns
    ``(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)``.
    ``prefix``, ``actual_seq_qlen`` and ``actual_seq_kvlen`` may also be 1-D integer CPU
    tensors."""
    for name in _FA_LENGTHS:
        if name in kwargs:
            kwargs[name] = _host_lengths(kwargs[name], name, "npu_fusion_attention")
    return _torch.ops.kvflash.npu_fusion_attention(*args, **kwargs)


__all__ = ["npu_scatter_pa_kv_cache", "_npu_reshape_and_cache", "_npu_paged_attention",
           "_npu_paged_attention_get_workspace", "npu_fusion_attention", "npu_attention_update"]
