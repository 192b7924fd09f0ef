"""A serving loop shaped like vllm-ascend's standard attention backend
(vllm_ascend/attention/attention_v1.py, AscendAttentionBackendImpl.forward, vllm-ascend 0.23), run
on the CPU through ``import kvflash.torch_npu as torch_npu``: the backend code below calls torch_npu
names only. docs/python.md, "Running vllm-ascend's attention on a CPU", is its recipe.

Several requests are scheduled as vLLM's v1 scheduler does (decodes first, prompt chunks in the
token budget: chunked prefill), over a paged cache ``[num_blocks, block_size, num_kv_heads,
head_size]`` (block 0 is vLLM's null block, never written: NaN), with the metadata the backend's
builder makes (query_start_loc, seq_lens on the host, seq_lens_list, actual_seq_lengths_q =
query_start_loc[1:].tolist(), block_tables, slot_mapping, the attention state and the
(2048, 2048) int8 split-fuse mask). One request hits the prefix cache: its first block is another
request's. Each step writes the new K/V (``_npu_reshape_and_cache`` on A2/A3,
``npu_scatter_pa_kv_cache(cache_mode="Norm")`` on A5 over the padded slot_mapping, -1 for the
padding tokens) and attends (``npu_fused_infer_attention_score`` TND with sparse_mode 3, or
``_npu_paged_attention`` with a captured workspace for decode-only steps), and every output row is
checked against float64 attention over the request's own K/V history (vllm_support).

The mask is the 2-D (2048, 2048) one vllm-ascend's AttentionMaskBuilder makes; the test does not
depend on FIA accepting other mask shapes.
"""
import dataclasses
import math

import pytest
import torch

import kvflash.torch_npu as torch_npu
from vllm_support import attend, causal, check_out, gen, make_cache, randn

HEADS, KV_HEADS, HEAD_SIZE, BLOCK_SIZE, NUM_BLOCKS = 8, 2, 128, 128, 20
MAX_BLOCKS_PER_REQ = 4  # the width of vLLM's block_table buffer
SCALE = HEAD_SIZE ** -0.5
PAD_SLOT_ID = -1


# ------------------------------------------------------------------------------------------------
# The backend: vllm-ascend's calls, torch_npu names only
# ------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Metadata:
    """AscendMetadata's fields that the standard path reads."""
    attn_state: str                 # PrefillNoCache | PrefillCacheHit | ChunkedPrefill | DecodeOnly
    num_actual_tokens: int
    actual_seq_lengths_q: list      # query_start_loc[1:].tolist()
    seq_lens: torch.Tensor          # int32, host
    seq_lens_list: list
    block_tables: torch.Tensor      # int32 [num_reqs, max_blocks]
    slot_mapping: torch.Tensor      # int32 [num_actual_tokens]
    slot_mapping_padded: torch.Tensor  # the model runner's whole buffer (PAD_SLOT_ID past it)
    attn_mask: torch.Tensor


class Backend:
    """AscendAttentionBackendImpl's standard path for one layer. `device`: "a2" (ATB cache write,
    paged attention for graph-captured decode) or "a5" (npu_scatter_pa_kv_cache, FIA always)."""

    def __init__(self, key_cache, value_cache, device, paged_decode):
        self.key_cache, self.value_cache = key_cache, value_cache
        self.device, self.paged_decode = device, paged_decode
        self.workspaces = {}  # graph_params.workspaces: one per captured num_tokens

    def reshape_and_cache(self, key, value, m: Metadata):
        if self.device == "a5":  # do_kv_cache_update: the padded buffers, -1 skipped
            torch_npu.npu_scatter_pa_kv_cache(key.contiguous(), value.contiguous(), self.key_cache,
                                              self.value_cache, m.slot_mapping_padded.contiguous(),
                                              cache_mode="Norm")
        else:
            n = m.num_actual_tokens
            torch_npu._npu_reshape_and_cache(key=key[:n], value=value[:n],
                                             key_cache=self.key_cache,
                                             value_cache=self.value_cache,
                                             slot_indices=m.slot_mapping[:n])

    def forward_paged_attention(self, query, m: Metadata, output):
        # full_graph_pa: the workspace is taken at capture and serves every replay's lengths
        workspace = self.workspaces.get(query.shape[0])
        if workspace is None:
            workspace = torch_npu._npu_paged_attention_get_workspace(
                query=query, key_cache=self.key_cache, value_cache=self.value_cache,
                num_kv_heads=KV_HEADS, num_heads=HEADS, scale_value=SCALE,
                block_table=m.block_tables, context_lens=m.seq_lens, out=output)
            self.workspaces[query.shape[0]] = workspace
        torch_npu._npu_paged_attention(
            query=query, key_cache=self.key_cache, value_cache=self.value_cache,
            num_kv_heads=KV_HEADS, num_heads=HEADS, scale_value=SCALE,
            block_table=m.block_tables, context_lens=m.seq_lens, out=output,
            workspace=workspace)
        return output

    def forward_fused_infer_attention(self, query, key, value, m: Metadata, output):
        num_tokens = m.actual_seq_lengths_q[-1]
        if m.attn_state == "PrefillNoCache":
            block_size, block_table = 128, None
            actual_seq_lengths_kv = m.actual_seq_lengths_q
            key, value = key[:num_tokens], value[:num_tokens]
        else:
            num_block, block_size, _, _ = self.key_cache.shape
            key = self.key_cache.view(num_block, block_size, -1)
            value = self.value_cache.view(num_block, block_size, -1)
            block_table = m.block_tables
            actual_seq_lengths_kv = m.seq_lens_list
        attn_output, _ = torch_npu.npu_fused_infer_attention_score(
            query=query[:num_tokens], key=key, value=value, atten_mask=m.attn_mask,
            block_table=block_table, input_layout="TND", block_size=block_size,
            actual_seq_lengths=m.actual_seq_lengths_q,
            actual_seq_lengths_kv=actual_seq_lengths_kv, num_key_value_heads=KV_HEADS,
            num_heads=HEADS, scale=SCALE, sparse_mode=3)
        attn_output = attn_output.view(num_tokens, HEADS, HEAD_SIZE)
        output[:num_tokens] = attn_output[:num_tokens]
        return output

    def forward(self, query, key, value, m: Metadata, output):
        self.reshape_and_cache(key, value, m)
        if m.attn_state == "DecodeOnly" and self.paged_decode:
            return self.forward_paged_attention(query, m, output)
        return self.forward_fused_infer_attention(query, key, value, m, output)


# ------------------------------------------------------------------------------------------------
# The scheduler and the model runner's metadata (what vLLM does around the backend)
# ------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Request:
    rid: int
    prompt_len: int
    max_tokens: int   # tokens generated after the prompt
    computed: int = 0  # positions whose K/V is in the cache
    blocks: list = dataclasses.field(default_factory=list)

    @property
    def total(self):
        return self.prompt_len + self.max_tokens

    def done(self):
        return self.computed >= self.total


class Model:
    """The per-position q / k / v rows (what a layer's projection would give), drawn once per
    (request, position): the float64 check and the cache see the same rows."""

    def __init__(self, dtype, seed):
        self.dtype, self.g, self.rows = dtype, gen(seed), {}

    def qkv(self, rid, pos, alias=None):
        key = (rid, pos)
        if alias is not None and alias in self.rows:  # a shared prefix: the same K/V
            q = randn((HEADS, HEAD_SIZE), self.dtype, self.g)
            self.rows[key] = (q, *self.rows[alias][1:])
        elif key not in self.rows:
            self.rows[key] = tuple(randn((n, HEAD_SIZE), self.dtype, self.g)
                                   for n in (HEADS, KV_HEADS, KV_HEADS))
        return self.rows[key]


def schedule(requests, budget):
    """vLLM v1: running decodes first (1 token each), then prompt chunks within the budget."""
    out, left = [], budget
    for r in requests:
        if not r.done() and r.computed >= r.prompt_len and left > 0:
            out.append((r, 1))
            left -= 1
    for r in requests:
        if r.computed < r.prompt_len and left > 0:
            n = min(r.prompt_len - r.computed, left)
            out.append((r, n))
            left -= n
    return out


def build_step(sched, model, free, pad_to, aliases, mask):
    """The step's query / key / value rows and the backend metadata; pad_to > 0: the tokens
    padded to a multiple of it (a captured graph's size)."""
    q_rows, k_rows, v_rows, slots, starts = [], [], [], [], [0]
    for r, n in sched:
        need = math.ceil((r.computed + n) / BLOCK_SIZE)
        while len(r.blocks) < need:
            r.blocks.append(free.pop())
        for pos in range(r.computed, r.computed + n):
            q, k, v = model.qkv(r.rid, pos, aliases.get((r.rid, pos)))
            q_rows.append(q), k_rows.append(k), v_rows.append(v)
            slots.append(r.blocks[pos // BLOCK_SIZE] * BLOCK_SIZE + pos % BLOCK_SIZE)
        starts.append(starts[-1] + n)
    num_actual = starts[-1]
    padded = -(-num_actual // pad_to) * pad_to if pad_to else num_actual  # graph sizes
    seq_lens = [r.computed + n for r, n in sched]
    width = MAX_BLOCKS_PER_REQ
    table = torch.zeros((len(sched), width), dtype=torch.int32)
    for b, (r, _) in enumerate(sched):
        table[b, :len(r.blocks)] = torch.tensor(r.blocks, dtype=torch.int32)
    actual_q = starts[1:]
    if padded > num_actual:  # the model runner's dummy padding request (block 0, length 1)
        actual_q = actual_q + [padded]
        seq_lens = seq_lens + [1]
        table = torch.cat([table, table.new_zeros((1, width))])
    if all(r.computed == 0 and n == r.prompt_len for r, n in sched):
        state = "PrefillNoCache"
    elif all(r.computed >= r.prompt_len for r, _ in sched):
        state = "DecodeOnly"
    elif all(r.computed < r.prompt_len for r, _ in sched):
        state = "PrefillCacheHit"
    else:
        state = "ChunkedPrefill"
    filler = [torch.zeros_like(q_rows[0])] * (padded - num_actual)
    kv_fill = [torch.zeros_like(k_rows[0])] * (padded - num_actual)
    slot_t = torch.tensor(slots, dtype=torch.int32)
    m = Metadata(attn_state=state, num_actual_tokens=num_actual, actual_seq_lengths_q=actual_q,
                 seq_lens=torch.tensor(seq_lens, dtype=torch.int32), seq_lens_list=seq_lens,
                 block_tables=table, slot_mapping=slot_t,
                 slot_mapping_padded=torch.cat([slot_t, torch.full((padded - num_actual,),
                                                                   PAD_SLOT_ID,
                                                                   dtype=torch.int32)]),
                 attn_mask=mask)
    return (torch.stack(q_rows + filler), torch.stack(k_rows + kv_fill),
            torch.stack(v_rows + kv_fill), m)


def check_step(sched, model, output, step):
    """Each request's rows against float64 attention over its own history (causal)."""
    row = 0
    for r, n in sched:
        end = r.computed + n
        hist = [model.rows[(r.rid, p)] for p in range(end)]
        q = torch.stack([h[0] for h in hist[r.computed:]])
        k = torch.stack([h[1] for h in hist])
        v = torch.stack([h[2] for h in hist])
        want, vmax, *_ = attend(q, k, v, float(torch.tensor(SCALE, dtype=torch.float32)),
                                causal(n, end))
        problem = check_out(f"serving step {step} request {r.rid}", output[row:row + n], want,
                            vmax)
        assert not problem, problem
        row += n


@pytest.mark.parametrize("device,dtype,paged_decode,pad_to", [
    ("a2", torch.bfloat16, True, 0),    # ATB write, graph-captured paged decode
    ("a2", torch.float16, False, 8),    # ATB write, FIA decode, the runner's padding request
    ("a5", torch.bfloat16, False, 8),   # npu_scatter_pa_kv_cache over the padded slots
], ids=["a2_bf16_paged_decode", "a2_fp16_fia_decode_padded", "a5_bf16_scatter"])
def test_serving_loop_matches_float64(device, dtype, paged_decode, pad_to):
    g = gen(20)
    mask = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)  # get_splitfuse_attn_mask
    key_cache = make_cache(NUM_BLOCKS, BLOCK_SIZE, KV_HEADS, HEAD_SIZE, dtype)
    value_cache = make_cache(NUM_BLOCKS, BLOCK_SIZE, KV_HEADS, HEAD_SIZE, dtype)
    backend = Backend(key_cache, value_cache, device, paged_decode)
    model = Model(dtype, 21)
    free = [int(b) for b in torch.randperm(NUM_BLOCKS - 1, generator=g) + 1]  # block 0: null
    # Two prompts that fit the first step whole (PrefillNoCache), then arrivals that are chunked.
    first = [Request(0, 150, 3), Request(1, 40, 4)]
    later = [Request(2, 300, 2), Request(3, 9, 5), Request(4, 200, 2)]
    # Request 4 shares request 2's first block (prefix caching): its first BLOCK_SIZE positions
    # are request 2's K/V, already in the cache when it arrives.
    aliases = {(4, p): (2, p) for p in range(BLOCK_SIZE)}
    states, step = set(), 0

    def run(requests, budget, until):
        nonlocal step
        while not until():
            sched = schedule(requests, budget)
            query, key, value, m = build_step(sched, model, free, pad_to, aliases, mask)
            output = torch.full_like(query, float("nan"))
            backend.forward(query, key, value, m, output)
            check_step(sched, model, output, step)
            states.add(m.attn_state)
            for r, n in sched:
                r.computed += n
            step += 1

    run(first, 256, lambda: first[0].computed > 150)      # the prompts, then one decode step
    requests = first + later[:2]
    run(requests, 160, lambda: later[0].computed >= 300)  # chunked prefill with the decodes
    # request 4 arrives with its first block cached
    r4 = later[2]
    r4.blocks.append(later[0].blocks[0])
    for p in range(BLOCK_SIZE):
        model.qkv(4, p, aliases[(4, p)])
    r4.computed = BLOCK_SIZE
    requests = requests + [r4]
    run(requests, 64, lambda: all(r.done() for r in requests))
    assert {"PrefillNoCache", "ChunkedPrefill", "DecodeOnly"} <= states, states
    # the null block was never written
    assert bool(key_cache[0].isnan().all()) and bool(value_cache[0].isnan().all())


def test_encoder_attention_matches_float64():
    """_forward_encoder_attention (pooling models): npu_fusion_attention over TND, no mask, the
    cumulative lengths padded with a trailing 0 when the batch has padding tokens."""
    g = gen(22)
    lens = [7, 30, 1]
    padded = sum(lens) + 5
    query = randn((padded, HEADS, HEAD_SIZE), torch.float32, g)
    key = randn((padded, KV_HEADS, HEAD_SIZE), torch.float32, g)
    value = randn((padded, KV_HEADS, HEAD_SIZE), torch.float32, g)
    actual_seq_qlen = torch.tensor(lens).cumsum(0).tolist()
    if query.shape[0] > actual_seq_qlen[-1]:
        actual_seq_qlen = actual_seq_qlen + [0]
    out = torch_npu.npu_fusion_attention(query=query, key=key, value=value, head_num=HEADS,
                                         input_layout="TND", scale=SCALE,
                                         actual_seq_qlen=actual_seq_qlen,
                                         actual_seq_kvlen=actual_seq_qlen)[0]
    row = 0
    for n in lens:
        sl = slice(row, row + n)
        want, vmax, *_ = attend(query[sl], key[sl], value[sl],
                                float(torch.tensor(SCALE, dtype=torch.float32)))
        problem = check_out(f"encoder rows {row}..{row + n}", out[sl], want, vmax)
        assert not problem, problem
        row += n
