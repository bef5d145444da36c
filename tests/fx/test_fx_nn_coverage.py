"""Every ember.nn module traces: as a leaf call_module inside a user model (the
default), and, where its forward has no data-dependent Python, through its
functional body as the traced root -- with outputs identical to eager."""
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.fx import TraceError, symbolic_trace
from fxutil import rand


def _ints(*shape, high=5):
    return ember.from_numpy(np.random.default_rng(0).integers(0, high, shape))


def _prob(*shape):
    return rand(*shape).sigmoid()


X3 = lambda: (rand(2, 4, 6),)  # noqa: E731
X4 = lambda: (rand(2, 4, 6, 6),)  # noqa: E731
X5 = lambda: (rand(1, 2, 4, 4, 4),)  # noqa: E731
PAIR = lambda: (rand(3, 5), rand(3, 5, seed=1))  # noqa: E731

CASES = [
    (lambda: nn.ReLU(), X3), (lambda: nn.ReLU6(), X3), (lambda: nn.GELU(), X3),
    (lambda: nn.GELU("tanh"), X3), (lambda: nn.SiLU(), X3), (lambda: nn.Mish(), X3),
    (lambda: nn.ELU(), X3), (lambda: nn.CELU(), X3), (lambda: nn.SELU(), X3),
    (lambda: nn.LeakyReLU(0.2), X3), (lambda: nn.PReLU(4), X3), (lambda: nn.Sigmoid(), X3),
    (lambda: nn.Tanh(), X3), (lambda: nn.Hardtanh(), X3), (lambda: nn.Hardsigmoid(), X3),
    (lambda: nn.Hardswish(), X3), (lambda: nn.Hardshrink(), X3), (lambda: nn.Softshrink(), X3),
    (lambda: nn.Softsign(), X3), (lambda: nn.Softplus(), X3), (lambda: nn.Tanhshrink(), X3),
    (lambda: nn.Threshold(0.1, 20.0), X3), (lambda: nn.LogSigmoid(), X3),
    (lambda: nn.Softmax(dim=-1), X3), (lambda: nn.LogSoftmax(dim=1), X3),
    (lambda: nn.Softmin(dim=1), X3), (lambda: nn.Softmax2d(), X4), (lambda: nn.GLU(), X3),
    (lambda: nn.Identity(), X3), (lambda: nn.Flatten(), X4),
    (lambda: nn.Unflatten(1, (2, 2)), X3),
    (lambda: nn.Linear(6, 3), X3), (lambda: nn.Bilinear(5, 5, 2), PAIR),
    (lambda: nn.Conv1d(4, 3, 3, padding=1), X3), (lambda: nn.Conv2d(4, 3, 3, stride=2), X4),
    (lambda: nn.Conv3d(2, 3, 3), X5), (lambda: nn.ConvTranspose1d(4, 3, 3), X3),
    (lambda: nn.ConvTranspose2d(4, 3, 3, stride=2), X4),
    (lambda: nn.ConvTranspose3d(2, 3, 2), X5),
    (lambda: nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"), X4),
    (lambda: nn.BatchNorm1d(4), X3), (lambda: nn.BatchNorm2d(4), X4),
    (lambda: nn.BatchNorm3d(2), X5), (lambda: nn.InstanceNorm1d(4), X3),
    (lambda: nn.InstanceNorm2d(4, affine=True), X4), (lambda: nn.GroupNorm(2, 4), X4),
    (lambda: nn.LayerNorm(6), X3), (lambda: nn.RMSNorm(6), X3),
    (lambda: nn.LocalResponseNorm(2), X4),
    (lambda: nn.MaxPool1d(2), X3), (lambda: nn.MaxPool2d(2), X4), (lambda: nn.MaxPool3d(2), X5),
    (lambda: nn.AvgPool1d(2), X3), (lambda: nn.AvgPool2d(3, 1, 1), X4),
    (lambda: nn.AvgPool3d(2), X5), (lambda: nn.AdaptiveAvgPool1d(3), X3),
    (lambda: nn.AdaptiveAvgPool2d((2, 3)), X4), (lambda: nn.AdaptiveAvgPool3d(2), X5),
    (lambda: nn.AdaptiveMaxPool1d(2), X3), (lambda: nn.AdaptiveMaxPool2d(3), X4),
    (lambda: nn.AdaptiveMaxPool3d(2), X5), (lambda: nn.LPPool1d(2, 2), X3),
    (lambda: nn.LPPool2d(2, 2), X4),
    (lambda: nn.ZeroPad2d(1), X4), (lambda: nn.ConstantPad1d((1, 2), 0.5), X3),
    (lambda: nn.ConstantPad2d(1, 1.0), X4), (lambda: nn.ReflectionPad1d(2), X3),
    (lambda: nn.ReflectionPad2d(1), X4), (lambda: nn.ReplicationPad2d(1), X4),
    (lambda: nn.ReplicationPad3d(1), X5), (lambda: nn.CircularPad1d(1), X3),
    (lambda: nn.PixelShuffle(2), X4), (lambda: nn.PixelUnshuffle(2), X4),
    (lambda: nn.ChannelShuffle(2), X4), (lambda: nn.Upsample(scale_factor=2), X4),
    (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), X4),
    (lambda: nn.UpsamplingNearest2d(scale_factor=2), X4),
    (lambda: nn.Unfold(2), X4), (lambda: nn.Fold((3, 3), 2), lambda: (rand(2, 8, 4),)),
    (lambda: nn.Dropout(0.5).eval(), X3), (lambda: nn.Dropout2d(0.5).eval(), X4),
    (lambda: nn.AlphaDropout(0.5).eval(), X3),
    (lambda: nn.Embedding(10, 3), lambda: (_ints(2, 4, high=10),)),
    (lambda: nn.EmbeddingBag(10, 3), lambda: (_ints(2, 4, high=10),)),
    (lambda: nn.CosineSimilarity(), PAIR), (lambda: nn.PairwiseDistance(), PAIR),
    (lambda: nn.MSELoss(), PAIR), (lambda: nn.L1Loss(), PAIR),
    (lambda: nn.SmoothL1Loss(), PAIR), (lambda: nn.HuberLoss(), PAIR),
    (lambda: nn.SoftMarginLoss(), PAIR), (lambda: nn.KLDivLoss(reduction="batchmean"), PAIR),
    (lambda: nn.BCELoss(), lambda: (_prob(3, 5), _prob(3, 5))),
    (lambda: nn.BCEWithLogitsLoss(), PAIR),
    (lambda: nn.CrossEntropyLoss(), lambda: (rand(3, 5), _ints(3))),
    (lambda: nn.NLLLoss(), lambda: (rand(3, 5).log_softmax(1), _ints(3))),
    (lambda: nn.MultiMarginLoss(), lambda: (rand(3, 5), _ints(3))),
    (lambda: nn.PoissonNLLLoss(), PAIR), (lambda: nn.GaussianNLLLoss(),
                                          lambda: (rand(3, 5), rand(3, 5), _prob(3, 5))),
    (lambda: nn.MultiLabelSoftMarginLoss(), lambda: (rand(3, 5), _ints(3, 5, high=2))),
    (lambda: nn.TripletMarginLoss(), lambda: (rand(3, 5), rand(3, 5), rand(3, 5))),
    (lambda: nn.MarginRankingLoss(), lambda: (rand(4), rand(4), rand(4).sign())),
    (lambda: nn.CosineEmbeddingLoss(), lambda: (rand(3, 5), rand(3, 5), rand(3).sign())),
    (lambda: nn.HingeEmbeddingLoss(), lambda: (rand(3, 5), rand(3, 5).sign())),
    (lambda: nn.RNN(6, 5), X3), (lambda: nn.GRU(6, 5, batch_first=True), X3),
    (lambda: nn.LSTM(6, 5, num_layers=2), X3), (lambda: nn.RNNCell(6, 5), lambda: (rand(3, 6),)),
    (lambda: nn.LSTMCell(6, 5), lambda: (rand(3, 6),)),
    (lambda: nn.GRUCell(6, 5), lambda: (rand(3, 6),)),
    (lambda: nn.MultiheadAttention(6, 2), lambda: (rand(4, 2, 6),) * 3),
    (lambda: nn.TransformerEncoderLayer(6, 2, 8, dropout=0.0), X3),
    (lambda: nn.TransformerDecoderLayer(6, 2, 8, dropout=0.0), lambda: (rand(4, 2, 6),) * 2),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(6, 2, 8, dropout=0.0), 2), X3),
    (lambda: nn.Transformer(6, 2, 1, 1, 8, dropout=0.0), lambda: (rand(4, 2, 6),) * 2),
    (lambda: nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 2)), X3),
]

# modules whose forward has no data-dependent Python: tracing them as the root must work
MUST_TRACE_THROUGH = {"ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Identity", "Linear", "LayerNorm", "Dropout", "Embedding",
                      "TransformerEncoderLayer", "TransformerDecoderLayer", "Sequential",
                      "MultiheadAttention", "Hardtanh", "LeakyReLU", "ELU", "Softplus",
                      "PixelShuffle", "ConstantPad1d", "ZeroPad2d", "CosineSimilarity",
                      "CrossEntropyLoss", "Flatten"}


class Holder(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, *xs):
        return self.m(*xs)


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, ember.Tensor):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    else:
        assert a == b


def _name(case):
    return type(case[0]()).__name__


@pytest.mark.parametrize("case", CASES, ids=[_name(c) for c in CASES])
def test_nn_module_traces_as_leaf_and_through_body(case):
    ctor, inputs = case
    ember.manual_seed(0)
    mod = ctor()
    xs = inputs()
    expected = copy.deepcopy(mod)(*xs)
    holder = Holder(copy.deepcopy(mod))
    # a user module reaches it through *xs: trace with named inputs instead
    names = [f"x{i}" for i in range(len(xs))]
    ns = {}
    exec(f"def forward(self, {', '.join(names)}):\n    return self.m({', '.join(names)})", ns)
    holder_cls = type("Holder", (Holder,), {"forward": ns["forward"]})
    holder.__class__ = holder_cls
    gm = symbolic_trace(holder)
    calls = [n for n in gm.graph.nodes if n.op == "call_module"]
    is_leaf = type(mod).__name__ != "Sequential"
    if is_leaf:
        assert [n.target for n in calls] == ["m"]
    _same(gm(*xs), expected)
    try:
        gm_body = symbolic_trace(copy.deepcopy(mod))
    except (TraceError, TypeError, RuntimeError) as e:
        assert type(mod).__name__ not in MUST_TRACE_THROUGH, f"{type(mod).__name__}: {e}"
        return
    _same(gm_body(*xs), expected)
