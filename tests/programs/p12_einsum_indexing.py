"""Index- and einsum-heavy code: multi-head attention written by hand with
einsum and masked_fill, checked against F.scaled_dot_product_attention and
nn.MultiheadAttention; scatter_add histograms, gather-based top-k metrics,
boolean-mask and advanced indexing, index_add_/index_select, one_hot, bincount,
unique, cumsum-based segment sums, and torch.where/nonzero."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def attention(q, k, v, mask=None):
    # q,k,v: (batch, heads, seq, dim)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v), weights


def main():
    rng = np.random.default_rng(0)
    B, H, T, D = 2, 3, 5, 4
    q, k, v = (torch.from_numpy(rng.standard_normal((B, H, T, D)).astype(np.float32)) for _ in range(3))
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    out, w = attention(q, k, v, causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    print(f"ok sdpa_matches {torch.allclose(out, ref, atol=1e-5)}")
    print(f"= attn_out {out.sum().item():.5f} {w[0, 1, 2].tolist()[0]:.5f}")
    print(f"= attn_upper_zero {w.triu(1).abs().max().item()}")

    # hand-written multi-head projection == nn.MultiheadAttention
    E = H * D
    mha = nn.MultiheadAttention(E, H, batch_first=True, bias=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, (3 * E, E)).astype(np.float32)))
        mha.in_proj_bias.copy_(torch.from_numpy(rng.uniform(-0.1, 0.1, 3 * E).astype(np.float32)))
        mha.out_proj.weight.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, (E, E)).astype(np.float32)))
        mha.out_proj.bias.zero_()
    x = torch.from_numpy(rng.standard_normal((B, T, E)).astype(np.float32))
    pad = torch.tensor([[False] * T, [False] * (T - 2) + [True] * 2])
    y_ref, w_ref = mha(x, x, x, key_padding_mask=pad, need_weights=True, average_attn_weights=True)
    wq, wk, wv = mha.in_proj_weight.chunk(3)
    bq, bk, bv = mha.in_proj_bias.chunk(3)
    split = lambda t: t.view(B, T, H, D).transpose(1, 2)
    qh, kh, vh = split(x @ wq.T + bq), split(x @ wk.T + bk), split(x @ wv.T + bv)
    keep = ~pad[:, None, None, :]
    o, wts = attention(qh, kh, vh, keep.expand(B, H, T, T))
    y = mha.out_proj(o.transpose(1, 2).reshape(B, T, E))
    print(f"ok mha_matches {torch.allclose(y, y_ref, atol=1e-5)} {torch.allclose(wts.mean(1), w_ref, atol=1e-6)}")
    print(f"= mha_sum {y_ref.sum().item():.5f}")

    # histograms with scatter_add_ / bincount / histc
    vals = torch.from_numpy(rng.integers(0, 6, size=40))
    hist = torch.zeros(6, dtype=torch.long).scatter_add_(0, vals, torch.ones_like(vals))
    print(f"= hist {hist.tolist()}")
    print(f"ok hist_agrees {torch.equal(hist, torch.bincount(vals, minlength=6))}")
    weights = torch.from_numpy(rng.uniform(size=40).astype(np.float32))
    whist = torch.zeros(6).index_add_(0, vals, weights)
    print(f"= weighted_hist {' '.join(f'{t:.4f}' for t in whist.tolist())}")
    print(f"= histc {torch.histc(weights, bins=4, min=0, max=1).tolist()}")

    # top-k accuracy with gather / topk
    logits = torch.from_numpy(rng.standard_normal((16, 10)).astype(np.float32))
    target = torch.from_numpy(rng.integers(0, 10, size=16))
    topk = logits.topk(3, dim=1).indices
    top1 = (topk[:, 0] == target).float().mean()
    top3 = (topk == target.unsqueeze(1)).any(dim=1).float().mean()
    target_logit = logits.gather(1, target.unsqueeze(1)).squeeze(1)
    rank = (logits > target_logit.unsqueeze(1)).sum(1)
    print(f"= topk_acc {top1.item():.4f} {top3.item():.4f}")
    print(f"ok rank_consistent {torch.equal(rank < 3, (topk == target[:, None]).any(1))}")
    print(f"= ranks {rank.tolist()}")
    nll = -(F.log_softmax(logits, 1).gather(1, target[:, None])).mean()
    print(f"ok gather_nll {torch.allclose(nll, F.cross_entropy(logits, target))}")

    # confusion matrix via flat index + bincount, one_hot, per-class recall
    pred = logits.argmax(1)
    conf = torch.bincount(target * 10 + pred, minlength=100).view(10, 10)
    onehot = F.one_hot(target, num_classes=10)
    print(f"= conf_trace {conf.trace().item()} onehot_sum {onehot.sum(0).tolist()}")
    recall = conf.diag().float() / conf.sum(1).clamp(min=1).float()
    print(f"= recall {' '.join(f'{t:.3f}' for t in recall.tolist())}")

    # boolean mask / advanced indexing / nonzero / where / unique
    m = torch.from_numpy(rng.standard_normal((6, 5)).astype(np.float32))
    pos = m[m > 0]
    rows, cols = torch.nonzero(m > 1.0, as_tuple=True)
    clipped = torch.where(m.abs() > 1.5, m.sign() * 1.5, m)
    print(f"= masked {pos.numel()} {pos.sum().item():.5f} nonzero {rows.tolist()} {cols.tolist()}")
    print(f"= where_sum {clipped.sum().item():.5f}")
    sub = m[[0, 2, 4]][:, [1, 3]]
    m2 = m.clone()
    m2[torch.tensor([1, 3]), torch.tensor([0, 4])] = -9.0
    m2[:, 2][m2[:, 2] < 0] = 0.0
    print(f"= adv_index {sub.sum().item():.5f} {m2.sum().item():.5f} {(m2 == -9).sum().item()}")
    u, inv, counts = torch.unique(vals, sorted=True, return_inverse=True, return_counts=True)
    print(f"= unique {u.tolist()} {counts.tolist()} {torch.equal(u[inv], vals)}")

    # segment sums with cumsum and index_select, sort/argsort stability
    seg_len = torch.tensor([3, 1, 4, 2])
    data = torch.arange(10, dtype=torch.float32) ** 2
    seg_ids = torch.repeat_interleave(torch.arange(4), seg_len)
    seg_sum = torch.zeros(4).scatter_reduce(0, seg_ids, data, reduce="sum")
    seg_max = torch.zeros(4).scatter_reduce(0, seg_ids, data, reduce="amax", include_self=False)
    ends = seg_len.cumsum(0) - 1
    csum = data.cumsum(0).index_select(0, ends)
    print(f"= segments {seg_sum.tolist()} {seg_max.tolist()} {torch.equal(seg_sum, torch.diff(csum, prepend=torch.zeros(1)))}")
    keys = torch.tensor([3, 1, 3, 2, 1, 3])
    print(f"= stable_argsort {torch.argsort(keys, stable=True).tolist()}")

    # gradient flows through masked_fill / gather / scatter / einsum
    qg = q.clone().requires_grad_()
    o, _ = attention(qg, k, v, causal)
    loss = o.gather(-1, torch.zeros(B, H, T, 1, dtype=torch.long)).sum()
    loss.backward()
    print(f"= grad_q {qg.grad.abs().sum().item():.5f}")


if __name__ == "__main__":
    main()
