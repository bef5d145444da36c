"""A small Transformer-encoder language model: nn.TransformerEncoder with a causal
mask and a key padding mask, AdamW with weight-decay groups, warmup LambdaLR,
greedy decoding."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, PAD = 10, 0


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class TinyLM(nn.Module):
    def __init__(self, d_model=32, nhead=4, layers=2):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, VOCAB, bias=False)
        self.lm_head.weight = self.embed.weight  # weight tying

    def forward(self, tokens):
        t = tokens.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        pad_mask = torch.zeros(tokens.shape).masked_fill(tokens == PAD, float("-inf"))
        h = self.pos(self.embed(tokens) * math.sqrt(self.d_model))
        h = self.encoder(h, mask=mask, src_key_padding_mask=pad_mask, is_causal=True)
        return self.lm_head(self.norm(h))


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.from_numpy((rng.standard_normal(p.shape) * 0.3 / math.sqrt(p.shape[1])).astype(np.float32)))
            elif "norm" in name and name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()


def make_batch(rng, bs, length):
    # sequences that count upward mod 9 (tokens 1..9) from a random start, right padded
    starts = rng.integers(1, 10, size=bs)
    lens = rng.integers(length // 2, length + 1, size=bs)
    seq = (starts[:, None] - 1 + np.arange(length)[None]) % 9 + 1
    seq[np.arange(length)[None] >= lens[:, None]] = PAD
    return torch.from_numpy(seq)


def main():
    model = TinyLM()
    numpy_init(model, 0)
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.98))
    warmup = 10
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warmup))
    rng = np.random.default_rng(0)
    losses, lrs = [], []
    for step in range(60):
        tokens = make_batch(rng, 16, 12)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        lrs.append(sched.get_last_lr()[0])
        sched.step()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad():
        seq = torch.tensor([[4, 5]])
        for _ in range(6):
            nxt = model(seq)[:, -1].argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], dim=1)
    print(f"= n_params {n_params}")
    print(f"= tied {model.lm_head.weight is model.embed.weight}")
    print(f"= lrs {lrs[0]:.6f} {lrs[5]:.6f} {lrs[20]:.6f}")
    print(f"= loss_first {losses[0]:.4f} {losses[1]:.4f} {losses[2]:.4f}")
    print(f"= loss_step20 {losses[20]:.4f}")
    print(f"ok loss_decreased {np.mean(losses[-5:]) < 0.5 * losses[0]}")
    print(f"~ loss_last {np.mean(losses[-5:]):.4f}")
    print(f"= generated {seq.tolist()[0]}")


if __name__ == "__main__":
    main()
