"""torch_npu's attention operators on any machine: ``import kvflash.torch_npu as torch_npu``.

``npu_incre_flash_attention`` and ``npu_sparse_flash_attention`` have torch_npu 2.14.0's
signatures and semantics, ``npu_lightning_indexer`` torch_npu 7.3.0's,
``npu_prompt_flash_attention``, ``npu_fused_infer_attention_score`` (with ``.out``),
``npu_fused_infer_attention_score_v2`` (with ``.out``) and the two ``_get_max_workspace``
operators op-plugin master's, and the rest of vllm-ascend's attention path with torch_npu
2.14.0's schemas: ``npu_scatter_pa_kv_cache``, ``_npu_reshape_and_cache``, ``_npu_paged_attention``
(with ``_npu_paged_attention_get_workspace``), ``npu_fusion_attention`` and
``npu_attention_update`` (docs/python.md); they are ``torch.ops.kvflash.*``. Nothing else of
torch_npu is provided.
"""
from kvflash import npu_incre_flash_attention, npu_sparse_flash_attention
from kvflash import npu_lightning_indexer
from kvflash._fia import (_npu_fused_infer_attention_score_get_max_workspace,
                          _npu_fused_infer_attention_score_v2_get_max_workspace,
                          npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2,
                          npu_prompt_flash_attention)

__all__ = ["npu_incre_flash_attention", "npu_sparse_flash_attention",
           "npu_prompt_flash_attention", "npu_fused_infer_attention_score",
           "npu_fused_infer_attention_score_v2",
           "_npu_fused_infer_attention_score_get_max_workspace",
           "_npu_fused_infer_attention_score_v2_get_max_workspace"]
__all__ += ["npu_lightning_indexer"]

# vllm-ascend's cache writes, paged attention, FlashAttentionScore and LSE update.
from kvflash._vllm_ascend import (_npu_paged_attention,  # noqa: E402
                                  _npu_paged_attention_get_workspace, _npu_reshape_and_cache,
                                  npu_attention_update, npu_fusion_attention,
                                  npu_scatter_pa_kv_cache)

__all__ += ["npu_scatter_pa_kv_cache", "_npu_reshape_and_cache", "_npu_paged_attention",
            "_npu_paged_attention_get_workspace", "npu_fusion_attention", "npu_attention_update"]


def __getattr__(name):
    raise AttributeError(f"kvflash.torch_npu provides {', '.join(__all__)} only, not {name!r}")
