"""torch.ops.kvflash.npu_lightning_indexer: values against a float64 torch computation on every
layout pair, the output shapes of torch_npu's rule (and the fake kernel's), bad arguments and bad
device data as ValueError naming the argument, torch.compile, and the DeepSeek-V3.2 step as
vllm-ascend calls it (npu_lightning_indexer then npu_sparse_flash_attention, TND query, PA_BSND
caches, sparse_mode 3, attention_mode 2) against a float64 computation of the whole step."""
import math

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import kvflash
import kvflash.torch_npu as torch_npu
from support import build_li, check_li, li_key_rows, li_reference, randn, _gen

LAYOUTS = [("BSND", "BSND"), ("TND", "TND"), ("BSND", "PA_BSND"), ("TND", "PA_BSND")]


@pytest.mark.parametrize("layout_q,layout_k", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("w_fp32", [False, True], ids=["w_qdtype", "w_fp32"])
@pytest.mark.parametrize("mode", [0, 3])
def test_matches_float64(layout_q, layout_k, dtype, w_fp32, mode):
    q, k, w, kw = build_li(layout_q, layout_k, dtype, torch.float32 if w_fp32 else None,
                           heads=9, sparse_count=24, q_lens=(1, 4, 2), kv_lens=(40, 70, 10),
                           sparse_mode=mode, return_value=True, seed=mode + 2 * int(w_fp32))
    indices, values = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    assert indices.dtype == torch.int32 and values.dtype == dtype
    want = ([q.shape[0], q.shape[1], 1, 24] if layout_q == "BSND" else [q.shape[0], 1, 24])
    assert list(indices.shape) == want and list(values.shape) == want
    check_li(indices, values, li_reference(q, k, w, kw), 24, 9, dtype)


def test_ties_go_to_the_lower_index_and_nan_ranks_first():
    q, k, w, kw = build_li("TND", "PA_BSND", heads=4, sparse_count=8, q_lens=(1,), kv_lens=(40,),
                           sparse_mode=0)
    q.abs_()
    w.abs_()  # positive dots and weights: two distinct scores, no relu zeros
    table = kw["block_table"]
    bs = k.shape[1]
    a, b = k[int(table[0, 0]), 0, 0].abs(), k[int(table[0, 0]), 1, 0].abs()
    for j in range(40):  # keys alternate between two rows: 20 equal scores each
        k[int(table[0, j // bs]), j % bs, 0] = a if j % 2 == 0 else b
    scores = li_reference(q, k, w, kw)[0][0]
    first = 0 if scores[0] > scores[1] else 1
    indices, _ = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    assert indices.flatten().tolist() == list(range(first, 16, 2))
    k[int(table[0, 20 // bs]), 20 % bs, 0, 7] = float("nan")  # NaN scores rank first
    indices, _ = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    rest = [j for j in range(first, 40, 2) if j != 20][:7]
    assert indices.flatten().tolist() == [20] + rest


def test_rows_without_keys_and_padding_rows_are_all_minus_one():
    # BSND with S1 = 3: batch 0's row i has 2 - 3 + i + 1 = i keys (mode 3); batch 1 has one
    # query row, so its rows 1 and 2 are padding.
    q, k, w, kw = build_li("BSND", "BSND", heads=4, sparse_count=8, q_lens=(3, 1), kv_lens=(2, 9))
    indices, _ = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    assert indices[0, 0].flatten().tolist() == [-1] * 8
    assert indices[0, 1].flatten().tolist() == [0] + [-1] * 7
    assert sorted(indices[0, 2].flatten().tolist()[:2]) == [0, 1]
    assert indices[1, 1].flatten().tolist() == [-1] * 8
    assert indices[1, 2].flatten().tolist() == [-1] * 8
    check_li(indices, None, li_reference(q, k, w, kw), 8, 4, q.dtype)


def test_torch_npu_module_exports_it():
    assert torch_npu.npu_lightning_indexer is torch.ops.kvflash.npu_lightning_indexer
    assert kvflash.npu_lightning_indexer is torch.ops.kvflash.npu_lightning_indexer


def test_no_values_means_an_empty_tensor():
    q, k, w, kw = build_li()
    indices, values = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    assert values.shape == (0,) and values.dtype == q.dtype
    assert indices.shape == (q.shape[0], 1, 16)


@pytest.mark.parametrize("layout_q,layout_k", LAYOUTS)
@pytest.mark.parametrize("values", [False, True])
def test_fake_matches_real(layout_q, layout_k, values):
    q, k, w, kw = build_li(layout_q, layout_k, return_value=values)
    real = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    with FakeTensorMode() as mode:
        fq, fk, fw = (mode.from_tensor(t) for t in (q, k, w))
        fkw = {n: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for n, v in kw.items()}
        fake = torch.ops.kvflash.npu_lightning_indexer(fq, fk, fw, **fkw)
    for r, f in zip(real, fake):
        assert f.shape == r.shape and f.dtype == r.dtype and f.stride() == r.stride()


@pytest.mark.parametrize("change,name", [
    (dict(sparse_count=3000), "sparse_count"),
    (dict(sparse_count=0), "sparse_count"),
    (dict(sparse_count=1 << 40), "sparse_count"),
    (dict(sparse_mode=1), "sparse_mode"),
    (dict(pre_tokens=5), "pre_tokens"),
    (dict(next_tokens=5), "next_tokens"),
    (dict(layout_key="XYZ"), "layout_key"),
    (dict(layout_query="BSH"), "layout_query"),
    (dict(block_table=None), "block_table"),
    (dict(actual_seq_lengths_key=None), "actual_seq_lengths_key"),
    (dict(actual_seq_lengths_query=None), "actual_seq_lengths_query"),
])
def test_bad_arguments_are_value_errors_naming_them(change, name):
    q, k, w, kw = build_li()
    kw.update(change)
    with pytest.raises(ValueError, match=name):
        torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)


def test_bad_tensors_are_value_errors_naming_them():
    q, k, w, kw = build_li()
    with pytest.raises(ValueError, match="weights"):
        torch.ops.kvflash.npu_lightning_indexer(q, k, w.to(torch.float16), **kw)
    with pytest.raises(ValueError, match="key"):
        torch.ops.kvflash.npu_lightning_indexer(q, k.to(torch.float16), w, **kw)
    with pytest.raises(ValueError, match="query"):
        torch.ops.kvflash.npu_lightning_indexer(q[..., :64], k, w, **kw)
    with pytest.raises(ValueError, match="actual_seq_lengths_key dtype must be int32 or int64"):
        torch.ops.kvflash.npu_lightning_indexer(
            q, k, w, **dict(kw, actual_seq_lengths_key=kw["actual_seq_lengths_key"].float()))


def test_bad_device_data_is_a_value_error_naming_the_entry():
    q, k, w, kw = build_li()
    kw["block_table"][1, 0] = k.shape[0]
    with pytest.raises(ValueError, match=r"block_table\[1\]\[0\]"):
        torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    q, k, w, kw = build_li()
    kw["actual_seq_lengths_key"][0] = 1 << 20
    with pytest.raises(ValueError, match=r"actual_seq_lengths_key\[0\]"):
        torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)


def test_the_same_bits_at_every_thread_count():
    q, k, w, kw = build_li(heads=64, sparse_count=64, q_lens=(1, 2), kv_lens=(3000, 2500),
                           block_size=128, return_value=True)
    saved = torch.get_num_threads()
    try:
        outs = []
        for t in (1, 2, 3):
            torch.set_num_threads(t)
            outs.append(torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw))
    finally:
        torch.set_num_threads(saved)
    for o in outs[1:]:
        assert torch.equal(o[0], outs[0][0])
        assert torch.equal(o[1].view(torch.int16), outs[0][1].view(torch.int16))


# ---- the DeepSeek-V3.2 step -----------------------------------------------------------------

def _dsa_inputs(seed=5, li_heads=16, heads=16, k_top=32, q_lens=(1, 3, 2), kv_lens=(150, 90, 31),
                block_size=16):
    """Indexer inputs (build_li, TND / PA_BSND, bf16 weights) and SFA inputs sharing the lengths
    and the block table (one cache geometry, as vllm-ascend's two caches share the table)."""
    q_li, k_li, w, kw = build_li("TND", "PA_BSND", torch.bfloat16, heads=li_heads,
                                 sparse_count=k_top, q_lens=q_lens, kv_lens=kv_lens,
                                 block_size=block_size, seed=seed)
    g = _gen(seed + 100)
    t = q_li.shape[0]
    blocks = k_li.shape[0]
    sfa = dict(
        query=randn((t, heads, 512), torch.bfloat16, g),
        query_rope=randn((t, heads, 64), torch.bfloat16, g),
        kv=randn((blocks, block_size, 1, 512), torch.bfloat16, g),
        key_rope=randn((blocks, block_size, 1, 64), torch.bfloat16, g),
        scale=1.5 / math.sqrt(576))
    return q_li, k_li, w, kw, sfa


def _dsa_step(q_li, k_li, w, kw, sfa):
    topk, _ = torch_npu.npu_lightning_indexer(
        query=q_li, key=k_li, weights=w, actual_seq_lengths_query=kw["actual_seq_lengths_query"],
        actual_seq_lengths_key=kw["actual_seq_lengths_key"], block_table=kw["block_table"],
        layout_query="TND", layout_key="PA_BSND", sparse_count=kw["sparse_count"], sparse_mode=3)
    out, _, _ = torch_npu.npu_sparse_flash_attention(
        query=sfa["query"], key=sfa["kv"], value=sfa["kv"], sparse_indices=topk,
        scale_value=sfa["scale"], sparse_block_size=1, block_table=kw["block_table"],
        actual_seq_lengths_query=kw["actual_seq_lengths_query"],
        actual_seq_lengths_kv=kw["actual_seq_lengths_key"], query_rope=sfa["query_rope"],
        key_rope=sfa["key_rope"], layout_query="TND", layout_kv="PA_BSND", sparse_mode=3,
        attention_mode=2, return_softmax_lse=False)
    return topk, out


def _dsa_float64(q_li, k_li, w, kw, sfa):
    """The whole step in float64: the indexer's scores, a stable descending selection, then the
    sparse MLA over the selected tokens (softmax of (q.k + q_rope.k_rope) * scale, times k)."""
    ref = li_reference(q_li, k_li, w, kw)
    asq = kw["actual_seq_lengths_query"].tolist()
    out = torch.zeros(sfa["query"].shape, dtype=torch.float64)
    row = 0
    for b in range(len(asq)):
        lq = asq[b] - (asq[b - 1] if b > 0 else 0)
        for _ in range(lq):
            scores = ref[row][0]
            n = scores.shape[0]
            order = sorted(range(n), key=lambda j: (-scores[j].item(), j))[:kw["sparse_count"]]
            if order:
                kv = li_key_rows(sfa["kv"], kw, b, 0, n).double()[order]
                kr = li_key_rows(sfa["key_rope"], kw, b, 0, n).double()[order]
                logits = (sfa["query"][row].double() @ kv.T +
                          sfa["query_rope"][row].double() @ kr.T) * sfa["scale"]
                out[row] = torch.softmax(logits, dim=-1) @ kv
            row += 1
    return ref, out


def test_dsa_step_matches_float64():
    q_li, k_li, w, kw, sfa = _dsa_inputs()
    topk, out = _dsa_step(q_li, k_li, w, kw, sfa)
    ref, want = _dsa_float64(q_li, k_li, w, kw, sfa)
    check_li(topk, None, ref, kw["sparse_count"], q_li.shape[1], q_li.dtype)
    assert out.dtype == torch.bfloat16 and out.shape == sfa["query"].shape
    # bf16 output: one rounding (2^-9 relative) over fp32 arithmetic.
    err = (out.double() - want).abs()
    allow = 2.0 ** -8 * want.abs() + 1e-3
    assert bool((err <= allow).all()), f"worst {float((err - allow).max())}"


def test_dsa_step_compiles_fullgraph():
    q_li, k_li, w, kw, sfa = _dsa_inputs(seed=9)
    eager = _dsa_step(q_li, k_li, w, kw, sfa)
    compiled = torch.compile(_dsa_step, fullgraph=True, backend="eager")(q_li, k_li, w, kw, sfa)
    assert torch.equal(eager[0], compiled[0])
    assert torch.equal(eager[1].view(torch.int16), compiled[1].view(torch.int16))
