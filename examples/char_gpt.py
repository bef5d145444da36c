"""A character-level GPT trained on a text the repository carries, sampling at the end.

Written as PyTorch code with ``import ember as torch``: token + position
embeddings, pre-norm transformer blocks with causal ``scaled_dot_product_attention``,
AdamW with warmup + cosine decay, gradient clipping, and autoregressive sampling.
``python examples/char_gpt.py`` trains for about a minute on 2 cores.
"""
import argparse
import math
import os
import time

import ember as torch
import ember.nn as nn
import ember.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class Block(nn.Module):
    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model), nn.Dropout(dropout))
        self.n_heads = n_heads
        self.dropout = dropout

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
                   for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    def __init__(self, vocab, block_size=64, d_model=128, n_heads=4, n_layers=4, dropout=0.1):
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_heads, dropout) for _ in range(n_layers)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying
        self.apply(self._init)

    @staticmethod
    def _init(m):
        # GPT-2 style: small normal weights keep the initial logits (and loss) sane
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        logits = self.head(self.ln(self.blocks(x)))
        if targets is None:
            return logits
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    @torch.no_grad()
    def generate(self, idx, n, temperature=0.8, top_k=20):
        for _ in range(n):
            logits = self(idx[:, -self.block_size:])[:, -1] / temperature
            v, _ = torch.topk(logits, top_k)
            logits = logits.masked_fill(logits < v[:, -1:], float("-inf"))
            idx = torch.cat([idx, torch.multinomial(F.softmax(logits, -1), 1)], dim=1)
        return idx


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--sample", type=int, default=300, help="characters to sample at the end")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    text = open(os.path.join(HERE, "data", "corpus.txt")).read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text])
    model = CharGPT(len(chars))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 *
        (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
    print(f"{sum(p.numel() for p in model.parameters()) / 1e3:.0f}k parameters, "
          f"{len(text)} characters, vocabulary {len(chars)}")
    t0 = time.perf_counter()
    for step in range(args.steps):
        ix = torch.randint(len(data) - model.block_size - 1, (args.batch,))
        xb = torch.stack([data[i:i + model.block_size] for i in ix.tolist()])
        yb = torch.stack([data[i + 1:i + model.block_size + 1] for i in ix.tolist()])
        loss = model(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.3f}  "
                  f"{(step + 1) / (time.perf_counter() - t0):.1f} steps/s")
    model.eval()
    out = model.generate(torch.tensor([[stoi["T"]]]), args.sample)
    print("---- sample ----")
    print("".join(chars[i] for i in out[0].tolist()))


if __name__ == "__main__":
    main()
