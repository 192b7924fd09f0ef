"""An independent cross-check: on plain cases kvflash agrees with
torch.nn.functional.scaled_dot_product_attention computed in float64 on the same data, within the
output dtype's rounding (docs/conventions.md: |err| <= rtol * (|ref| + max|V|), rtol 2^-10 fp16,
2^-7 bf16). The worst error is printed at the end of the run."""
import pytest
import torch
import torch.nn.functional as F

import support
from support import randn

RTOL = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}


def _record(name, got, ref, vmax, dtype):
    err = (got.double() - ref).abs()
    tol = RTOL[dtype] * (ref.abs() + vmax)
    ratio = (err / tol).max().item()
    support.SDPA_WORST.append((name, str(dtype).replace("torch.", ""), err.max().item(), ratio))
    assert ratio <= 1.0, f"{name}: worst |err| {err.max().item():.3g} is {ratio:.3g} x tolerance"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("heads,kv_heads", [(8, 8), (8, 2), (16, 1)])
@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
def test_ifa_matches_sdpa(dtype, heads, kv_heads, masked):
    g = torch.Generator().manual_seed(heads * 10 + kv_heads + masked)
    B, D, S = 3, 64, 50
    lens = [50, 17, 33]
    q = randn((B, heads, 1, D), dtype, g)
    k = randn((B, kv_heads, S, D), dtype, g)
    v = randn((B, kv_heads, S, D), dtype, g)
    scale = D ** -0.5
    kw = dict(num_heads=heads, num_key_value_heads=kv_heads, scale_value=scale,
              input_layout="BNSD", actual_seq_lengths=lens)
    mask = None
    if masked:
        mask = torch.rand((B, S), generator=g) < 0.4
        mask[:, 0] = False  # no fully masked row (kvflash follows upstream: -1e12, not -inf)
        kw["atten_mask"] = mask
    out = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)
    for b, n in enumerate(lens):
        qb, kb, vb = (t[b:b + 1].double() for t in (q, k[:, :, :n], v[:, :, :n]))
        attend = None if mask is None else ~mask[b, :n].view(1, 1, 1, n)
        ref = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=attend, scale=scale,
                                             enable_gqa=heads != kv_heads)
        vmax = vb.abs().amax()
        _record(f"ifa_b{b}_{str(dtype)[6:]}_{heads}x{kv_heads}_{'mask' if masked else 'nomask'}",
                out[b:b + 1], ref, vmax, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_ifa_bsh_paged_matches_sdpa(dtype):
    g = torch.Generator().manual_seed(5)
    B, N, KVN, D, bs = 2, 4, 2, 128, 16
    lens = [37, 64]
    per_seq = 4
    nblocks = B * per_seq
    k_cache = randn((nblocks, bs, KVN * D), dtype, g)
    v_cache = randn((nblocks, bs, KVN * D), dtype, g)
    table = torch.randperm(nblocks, generator=g).to(torch.int32).view(B, per_seq)
    q = randn((B, 1, N * D), dtype, g)
    out = torch.ops.kvflash.npu_incre_flash_attention(
        q, k_cache, v_cache, block_table=table, actual_seq_lengths=lens, num_heads=N,
        num_key_value_heads=KVN, scale_value=D ** -0.5, input_layout="BSH", block_size=bs)
    for b, n in enumerate(lens):
        # the sequence's rows, gathered from its blocks, as (1, KVN, n, D)
        rows = lambda c: c[table[b].long()].reshape(per_seq * bs, KVN, D)[:n].permute(1, 0, 2)[None]
        qb = q[b].view(1, N, 1, D).double()
        kb, vb = rows(k_cache).double(), rows(v_cache).double()
        ref = F.scaled_dot_product_attention(qb, kb, vb, scale=D ** -0.5, enable_gqa=True)
        _record(f"ifa_paged_b{b}_{str(dtype)[6:]}", out[b].view(1, N, 1, D), ref, vb.abs().amax(), dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_sfa_matches_sdpa(dtype):
    """Sparse MLA decode (TND query, paged latent cache used as key and value) equals SDPA over the
    selected tokens: Q = [q_nope, q_rope], K = [latent, rope], V = latent."""
    g = torch.Generator().manual_seed(11)
    T, N, K, bs = 3, 16, 32, 32  # K <= every length: all K indices are examined (docs/semantics.md §3.4)
    kv_lens = [90, 33, 64]
    per_seq = 3
    nblocks = T * per_seq
    q = randn((T, N, 512), dtype, g)
    q_rope = randn((T, N, 64), dtype, g)
    latent = randn((nblocks, bs, 1, 512), dtype, g)
    rope = randn((nblocks, bs, 1, 64), dtype, g)
    table = torch.randperm(nblocks, generator=g).to(torch.int32).view(T, per_seq)
    idx = torch.stack([torch.randint(0, n, (K,), generator=g, dtype=torch.int32)
                       for n in kv_lens]).view(T, 1, K)
    scale = 576 ** -0.5
    out, _, _ = torch.ops.kvflash.npu_sparse_flash_attention(
        q, latent, latent, idx, scale, block_table=table,
        actual_seq_lengths_query=torch.arange(1, T + 1, dtype=torch.int32),
        actual_seq_lengths_kv=torch.tensor(kv_lens, dtype=torch.int32), query_rope=q_rope,
        key_rope=rope, layout_query="TND", layout_kv="PA_BSND", sparse_mode=3, attention_mode=2)
    for t in range(T):
        pos = idx[t, 0].long()
        blk, off = table[t].long()[pos // bs], pos % bs
        kn, kr = latent[blk, off, 0].double(), rope[blk, off, 0].double()   # (K, 512), (K, 64)
        qq = torch.cat([q[t], q_rope[t]], -1).double().view(1, N, 1, 576)
        kk = torch.cat([kn, kr], -1).view(1, 1, K, 576)
        ref = F.scaled_dot_product_attention(qq, kk, kn.view(1, 1, K, 512), scale=scale,
                                             enable_gqa=True)
        _record(f"sfa_t{t}_{str(dtype)[6:]}", out[t].view(1, N, 1, 512), ref, kn.abs().amax(), dtype)
