"""The Python export lists agree with the operators the extension registers (python/src/ops.cpp's
table): they are written by hand, so a new torch operator without its export, or an export left
behind by a removed operator, fails here.
"""
import torch

import kvflash
import kvflash.torch_npu as torch_npu


def _kvflash_ops():
    """The names of torch.ops.kvflash's operators, without the overload."""
    return {
        name.split("::", 1)[1].split(".", 1)[0]
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith("kvflash::")
    }


def test_torch_npu_exports_every_npu_operator():
    ops = _kvflash_ops()
    npu_ops = {op for op in ops if op.startswith(("npu_", "_npu_"))}
    assert npu_ops, "no npu operators registered"
    assert set(torch_npu.__all__) == npu_ops
    for name in torch_npu.__all__:
        assert callable(getattr(torch_npu, name)), name


def test_kvflash_exports_are_operators_or_its_functions():
    ops = _kvflash_ops()
    own = {"set_thread_pool", "get_thread_pool"}
    assert set(kvflash.__all__) - own <= ops
    for name in kvflash.__all__:
        assert callable(getattr(kvflash, name)), name
