"""Sequence classification with Embedding + packed bidirectional LSTM and a GRU,
pad_sequence / pack_padded_sequence / pad_packed_sequence and gradient clipping."""
import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

VOCAB = 12


def make_data(n, seed):
    # label: does token 3 appear before token 7 in the sequence
    rng = np.random.default_rng(seed)
    seqs, labels = [], []
    for _ in range(n):
        length = int(rng.integers(3, 15))
        s = rng.integers(1, VOCAB, size=length)
        seqs.append(torch.from_numpy(s))
        i3 = np.where(s == 3)[0]
        i7 = np.where(s == 7)[0]
        first3 = i3[0] if len(i3) else 99
        first7 = i7[0] if len(i7) else 99
        labels.append(int(first3 < first7))
    return seqs, torch.tensor(labels)


class Classifier(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 8, padding_idx=0)
        self.lstm = nn.LSTM(8, hidden, num_layers=1, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def forward(self, padded, lengths):
        x = self.emb(padded)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=True)
        packed2 = pack_padded_sequence(out, out_lengths, batch_first=True, enforce_sorted=False)
        _, h2 = self.gru(packed2)
        return self.head(h2[-1])


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, size=tuple(p.shape)).astype(np.float32)))
        model.emb.weight[0].zero_()


def batches(seqs, labels, bs):
    for i in range(0, len(seqs), bs):
        chunk = seqs[i:i + bs]
        lengths = torch.tensor([len(s) for s in chunk])
        yield pad_sequence(chunk, batch_first=True, padding_value=0), lengths, labels[i:i + bs]


def main():
    seqs, labels = make_data(384, 0)
    tseqs, tlabels = make_data(128, 1)
    model = Classifier()
    numpy_init(model, 0)
    opt = torch.optim.RMSprop(model.parameters(), lr=5e-3)
    crit = nn.CrossEntropyLoss()

    padded, lengths, _ = next(batches(seqs, labels, 4))
    print(f"= padded_shape {tuple(padded.shape)}")
    packed = pack_padded_sequence(model.emb(padded), lengths, batch_first=True, enforce_sorted=False)
    print(f"= batch_sizes {packed.batch_sizes.tolist()}")
    print(f"= sorted_indices {packed.sorted_indices.tolist()}")

    norms, losses = [], []
    for epoch in range(6):
        total = 0.0
        for padded, lengths, y in batches(seqs, labels, 32):
            opt.zero_grad()
            loss = crit(model(padded, lengths), y)
            loss.backward()
            norms.append(float(nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)))
            opt.step()
            total += loss.item() * len(y)
        losses.append(total / len(seqs))
    with torch.no_grad():
        correct = sum((model(p, l).argmax(1) == y).sum().item() for p, l, y in batches(tseqs, tlabels, 64))
    print(f"= first_grad_norm {norms[0]:.5f}")
    print(f"= epoch_losses {' '.join(f'{v:.4f}' for v in losses[:3])}")
    print(f"ok loss_decreased {losses[-1] < losses[0]}")
    print(f"ok clipped_bounded {max(norms) > 0}")
    print(f"= test_acc {correct / len(tseqs):.4f}")
    with torch.no_grad():
        g = model.lstm.weight_ih_l0_reverse
    print(f"= lstm_param_shapes {tuple(g.shape)} {tuple(model.gru.weight_hh_l0.shape)}")


if __name__ == "__main__":
    main()
