"""Training-stack workloads (issue 3): one optimizer step of small models, and SDPA."""
import numpy as np

from .workloads import workload


def _data(lib, shape, seed=0, ints=None):
    rng = np.random.default_rng(seed)
    if ints is not None:
        return lib.from_numpy(rng.integers(0, ints, size=shape).astype(np.int64))
    return lib.from_numpy(rng.standard_normal(shape).astype(np.float32))


def _step(lib, model, opt, loss_fn):
    def step():
        opt.zero_grad()
        loss = loss_fn(model)
        loss.backward()
        opt.step()
    return step


@workload("mlp_train_step", "nn")
def mlp_train_step(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _data(lib, (128, 64)), _data(lib, (128,), ints=10)
    return _step(lib, model, opt, lambda m: nn.functional.cross_entropy(m(x), y))


@workload("lenet_train_step", "nn")
def lenet_train_step(lib, compile_model=False):
    """LeNet-5 on a batch of 64 28x28 images, SGD with momentum; ``compile_model``: the
    model through ``lib.compile`` (workloads_compile_kernels)."""
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                          nn.Linear(84, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = _data(lib, (64, 1, 28, 28)), _data(lib, (64,), ints=10)
    fwd = lib.compile(model) if compile_model else model
    return _step(lib, model, opt, lambda m: nn.functional.cross_entropy(fwd(x), y))


def tiny_gpt(lib, d=128, heads=4, seq=64, vocab=96, layers=4, dropout=0.0):
    """The benchmark GPT: pre-norm causal self-attention blocks (also used by benchmarks.ddp
    and, with ``dropout`` after the embedding, the attention and the MLP, by
    benchmarks.compile_capture)."""
    nn = lib.nn
    F = nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               dropout_p=dropout if self.training else 0.0)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + F.dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))), dropout,
                                 self.training)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, idx):
            x = F.dropout(self.tok(idx) + self.pos(lib.arange(idx.shape[1])), dropout,
                          self.training)
            return self.head(self.ln(self.blocks(x)))

    return GPT()


@workload("tiny_gpt_train_step", "nn")
def tiny_gpt_train_step(lib):
    seq, batch, vocab = 64, 16, 96
    model = tiny_gpt(lib, seq=seq, vocab=vocab)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = _data(lib, (batch, seq), ints=vocab), _data(lib, (batch, seq), 1, ints=vocab)
    return _step(lib, model, opt,
                 lambda m: lib.nn.functional.cross_entropy(m(x).flatten(0, 1), y.flatten()))


@workload("sdpa_causal_4096", "nn")
def sdpa_causal_4096(lib):
    q, k, v = (_data(lib, (1, 4, 4096, 64), s) for s in range(3))
    return lambda: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def _sdpa_step(lib, shape, causal):
    """Forward and backward of SDPA (gradients of q, k and v)."""
    q, k, v = (_data(lib, shape, s).requires_grad_(True) for s in range(3))
    g = _data(lib, shape, 3)

    def step():
        for t in (q, k, v):
            t.grad = None
        lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)
    return step


@workload("sdpa_causal_2048", "nn")
def sdpa_causal_2048(lib):
    q, k, v = (_data(lib, (1, 4, 2048, 64), s) for s in range(3))
    return lambda: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


@workload("sdpa_causal_2048_backward", "nn")
def sdpa_causal_2048_backward(lib):
    return _sdpa_step(lib, (1, 4, 2048, 64), True)


@workload("sdpa_8192", "nn")
def sdpa_8192(lib):
    """4 x 8192 x 64 (batch x L x head dim, one head), no mask: the long-sequence case."""
    q, k, v = (_data(lib, (4, 1, 8192, 64), s) for s in range(3))
    return lambda: lib.nn.functional.scaled_dot_product_attention(q, k, v)


@workload("sdpa_8192_backward", "nn")
def sdpa_8192_backward(lib):
    return _sdpa_step(lib, (4, 1, 8192, 64), False)
