"""Behaviours that public programs (pytorch/examples, nanoGPT, minGPT) run unchanged rely on
and ember got wrong; each checked against torch."""
import io

import numpy as np
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_whole_transformer_pickles_under_the_linear_module_path(lib):
    # word_language_model saves the whole model and reloads it allowlisting
    # nn.modules.linear.NonDynamicallyQuantizableLinear: MultiheadAttention's output
    # projection must be that very class
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 1,
                                  enable_nested_tensor=False)
    assert type(model.layers[0].self_attn.out_proj) is nn.modules.linear.NonDynamicallyQuantizableLinear
    buf = io.BytesIO()
    lib.save(model, buf)
    buf.seek(0)
    allowed = [nn.modules.activation.MultiheadAttention, nn.modules.container.ModuleList,
               nn.modules.dropout.Dropout, nn.modules.linear.Linear,
               nn.modules.linear.NonDynamicallyQuantizableLinear,
               nn.modules.normalization.LayerNorm, nn.modules.transformer.TransformerEncoder,
               nn.modules.transformer.TransformerEncoderLayer, nn.functional.relu]
    with lib.serialization.safe_globals(allowed):
        back = lib.load(buf)
    x = lib.randn(3, 2, 8)
    model.eval()
    back.eval()
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())
