"""helpers.attention_torch.MultiHeadAttention, the nn.Module of lesson 10.

Equality with nn.MultiheadAttention and SDPA's enable_gqa is property-tested in
test_properties.py; here: shapes, dropout, the copy rules and the errors.
"""

import pytest
import torch
from torch import nn

from helpers import attention_torch as atn


def test_shapes_projections_and_rows_that_sum_to_one():
    torch.manual_seed(0)
    mha = atn.MultiHeadAttention(12, 4, num_kv_heads=2)
    assert (mha.num_heads, mha.num_kv_heads, mha.d_k) == (4, 2, 3)
    assert mha.k_proj.weight.shape == mha.v_proj.weight.shape == (6, 12)
    assert mha.q_proj.bias.shape == (12,)
    x, kv = torch.randn(2, 5, 12), torch.randn(2, 7, 12)
    out, weights = mha(x, kv=kv)
    assert out.shape == (2, 5, 12) and weights.shape == (2, 4, 5, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 5))


def test_mask_true_means_may_attend():
    torch.manual_seed(1)
    mha = atn.MultiHeadAttention(8, 2)
    _, weights = mha(torch.randn(1, 4, 8), mask=atn.causal_mask(4))
    assert (weights[..., ~atn.causal_mask(4)] == 0).all()
    assert (weights[..., atn.causal_mask(4)] > 0).all()


def test_bias_false_has_no_biases():
    mha = atn.MultiHeadAttention(8, 2, bias=False)
    assert all(
        p.bias is None for p in (mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj)
    )


def test_dropout_acts_on_the_weights_in_training_only():
    torch.manual_seed(2)
    mha = atn.MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(3, 6, 8)
    mha.eval()
    out_eval, w_eval = mha(x)
    out_again, _ = mha(x)
    torch.testing.assert_close(out_eval, out_again)
    mha.train()
    out_train, w_train = mha(x)
    dropped = w_train == 0
    assert dropped.any() and (~dropped).any()
    # kept weights are scaled by 1 / (1 - p), as nn.Dropout does
    torch.testing.assert_close(w_train[~dropped], 2 * w_eval[~dropped])
    assert not torch.allclose(out_train, out_eval)


def test_gradients_reach_every_parameter():
    torch.manual_seed(3)
    mha = atn.MultiHeadAttention(8, 4, num_kv_heads=2)
    out, _ = mha(torch.randn(2, 3, 8), mask=atn.causal_mask(3))
    out.sum().backward()
    for name, p in mha.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("batch_first", [True, False])
def test_from_torch_copies_weights_biases_dropout_and_mode(batch_first):
    torch.manual_seed(4)
    theirs = nn.MultiheadAttention(8, 2, dropout=0.25, batch_first=batch_first).eval()
    ours = atn.MultiHeadAttention.from_torch(theirs)
    W_Q, W_K, W_V = theirs.in_proj_weight.chunk(3)
    torch.testing.assert_close(ours.k_proj.weight, W_K)
    torch.testing.assert_close(ours.v_proj.bias, theirs.in_proj_bias.chunk(3)[2])
    torch.testing.assert_close(ours.out_proj.weight, theirs.out_proj.weight)
    assert ours.dropout.p == 0.25 and not ours.training
    back = ours.to_torch(batch_first=batch_first)
    torch.testing.assert_close(back.in_proj_weight, theirs.in_proj_weight)
    assert back.batch_first == batch_first


def test_from_torch_keeps_float64():
    theirs = nn.MultiheadAttention(4, 2, dtype=torch.float64)
    ours = atn.MultiHeadAttention.from_torch(theirs)
    assert ours.q_proj.weight.dtype == torch.float64
    torch.testing.assert_close(
        ours.q_proj.weight, theirs.in_proj_weight[:4], rtol=0, atol=0
    )


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(ValueError, match="kdim=4 and vdim=4 must equal embed_dim=8"):
        atn.MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
    with pytest.raises(ValueError, match="add_bias_kv"):
        atn.MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))
    with pytest.raises(TypeError, match="nn.MultiheadAttention"):
        atn.MultiHeadAttention.from_torch(nn.Linear(8, 8))


def test_constructor_and_input_errors():
    with pytest.raises(ValueError, match="d_model=10 is not divisible by num_heads=4"):
        atn.MultiHeadAttention(10, 4)
    with pytest.raises(
        ValueError, match="num_heads=4 is not a multiple of num_kv_heads=3"
    ):
        atn.MultiHeadAttention(12, 4, num_kv_heads=3)
    with pytest.raises(ValueError, match="num_kv_heads=1 must equal num_heads=2"):
        atn.MultiHeadAttention(8, 2, num_kv_heads=1).to_torch()
    mha = atn.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"add a batch axis"):
        mha(torch.randn(4, 8))
    with pytest.raises(ValueError, match=r"kv must have shape \(batch, m, d_model\)"):
        mha(torch.randn(1, 4, 8), kv=torch.randn(1, 4, 6))
    with pytest.raises(ValueError, match="x has d_model=6 features but this module"):
        mha(torch.randn(1, 4, 6))
    with pytest.raises(ValueError, match="x contains 1 non-finite value"):
        mha(torch.tensor([[[float("nan")] + [0.0] * 7]]))
    with pytest.raises(TypeError, match="mask must be boolean, True = may attend"):
        mha(torch.randn(1, 4, 8), mask=torch.ones(4, 4))
