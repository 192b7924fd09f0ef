"""PromptFlashAttention and FusedInferAttentionScore as torch_npu callers use them.

Each function calls its ``torch.ops.kvflash.*`` operator (the schemas are torch_npu's, see
docs/python.md) after turning a length tensor given for a host length list (``SymInt[]?`` /
``int[]?``: ``actual_seq_lengths``, ``actual_seq_qlen``, ...) into that list, as vllm-ascend
passes them. The FIA objects also have torch_npu's ``.out`` form, which takes the outputs as
``out=[attention_out, softmax_lse]`` (vllm-ascend's graph path) or by their schema names.
"""
import torch as _torch

from . import _host_lengths

_PFA_LENGTHS = ("actual_seq_lengths", "actual_seq_lengths_kv")
_FIA_LENGTHS = ("actual_seq_lengths", "actual_seq_lengths_kv", "actual_shared_prefix_len")
_FIA_V2_LENGTHS = ("actual_seq_qlen", "actual_seq_kvlen")


def _lists(kwargs, names, op):
    for name in names:
        if name in kwargs:
            kwargs[name] = _host_lengths(kwargs[name], name, op)
    return kwargs


class _Operator:
    """One torch_npu operator: ``op(query, key, value, **kwargs)``; with ``has_out``, also
    ``op.out(query, key, value, ..., workspace=None, out=[attention_out, softmax_lse])``."""

    def __init__(self, name, lengths, has_out=False):
        self._name = name
        self._lengths = lengths
        self._has_out = has_out
        self.__name__ = name
        self.__qualname__ = name
        self.__doc__ = (f"torch_npu.{name} (``torch.ops.kvflash.{name}``, torch_npu's schema); "
                        f"{', '.join(lengths)} may also be 1-D integer CPU tensors.")

    def __call__(self, *args, **kwargs):
        op = getattr(_torch.ops.kvflash, self._name)
        return op(*args, **_lists(kwargs, self._lengths, self._name))

    def out(self, *args, out=None, **kwargs):
        """The ``.out`` form: writes attention_out (and softmax_lse when it is requested; left as it
        is otherwise) and returns them. ``workspace`` (from the ``_get_max_workspace`` operator) is
        used when it is large enough."""
        if not self._has_out:
            raise AttributeError(f"{self._name} has no .out form")
        if out is not None:
            if "attention_out" in kwargs or "softmax_lse" in kwargs:
                raise ValueError(f"[{self._name}.out] pass the outputs as out=[attention_out, "
                                 f"softmax_lse] or by name, not both")
            if not isinstance(out, (list, tuple)) or len(out) != 2:
                raise ValueError(f"[{self._name}.out] out must be [attention_out, softmax_lse], "
                                 f"got {type(out).__name__}")
            kwargs["attention_out"], kwargs["softmax_lse"] = out
        op = getattr(_torch.ops.kvflash, self._name).out
        return op(*args, **_lists(kwargs, self._lengths, self._name + ".out"))

    def __repr__(self):
        return f"<kvflash operator {self._name}>"


npu_prompt_flash_attention = _Operator("npu_prompt_flash_attention", _PFA_LENGTHS)
npu_fused_infer_attention_score = _Operator("npu_fused_infer_attention_score", _FIA_LENGTHS,
                                            has_out=True)
npu_fused_infer_attention_score_v2 = _Operator("npu_fused_infer_attention_score_v2",
                                               _FIA_V2_LENGTHS, has_out=True)
_npu_fused_infer_attention_score_get_max_workspace = _Operator(
    "_npu_fused_infer_attention_score_get_max_workspace", _FIA_LENGTHS)
_npu_fused_infer_attention_score_v2_get_max_workspace = _Operator(
    "_npu_fused_infer_attention_score_v2_get_max_workspace", _FIA_V2_LENGTHS)

__all__ = ["npu_prompt_flash_attention", "npu_fused_infer_attention_score",
           "npu_fused_infer_attention_score_v2",
           "_npu_fused_infer_attention_score_get_max_workspace",
           "_npu_fused_infer_attention_score_v2_get_max_workspace"]
