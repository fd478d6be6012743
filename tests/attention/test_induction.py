"""helpers.induction (lesson 11): the repeated sequences, the scores, the model.

The scores are checked against explicit loops; the model against torch's fused
attention. Lesson 11's checkers are tested in tests/checks/test_induction.py.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers import induction
from helpers.checks import induction as checks_induction


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: a second intra-op thread only adds stalls on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def causal_weights(seed, batch=3, heads=2, n=12):
    rng = np.random.default_rng(seed)
    return checks_induction._causal_weights(rng, batch, heads, n)


def test_repeated_sequences_repeat_their_prefix():
    g = torch.Generator().manual_seed(0)
    tokens, lengths = induction.repeated_sequences(200, 24, 10, 3, 12, generator=g)
    assert tokens.shape == (200, 24) and tokens.dtype == torch.int64
    assert lengths.min() >= 3 and lengths.max() <= 12
    for row, p in zip(tokens, lengths.tolist(), strict=True):
        assert torch.equal(row[p : 2 * p], row[:p])
    assert len(set(lengths.tolist())) == 10  # every length from 3 to 12 occurs


@pytest.mark.parametrize(
    "low, high, n",
    [(0, 4, 16), (5, 4, 16), (4, 9, 16)],
    ids=["zero", "low>high", "2P>n"],
)
def test_repeated_sequences_rejects_impossible_lengths(low, high, n):
    with pytest.raises(ValueError, match="max_repeat"):
        induction.repeated_sequences(2, n, 10, low, high, generator=torch.Generator())


def test_scores_equal_explicit_loops():
    w = causal_weights(1, batch=3, heads=2, n=12)
    lengths = np.array([3, 6, 4])
    expected_prefix = np.zeros(2)
    count = 0
    for b, p in enumerate(lengths):
        for i in range(p, 2 * p):
            expected_prefix += w[b, :, i, i - p + 1]
            count += 1
    np.testing.assert_allclose(
        induction.prefix_matching_score(w, lengths), expected_prefix / count
    )
    expected_prev = np.array(
        [
            np.mean([w[b, h, i, i - 1] for b in range(3) for i in range(1, 12)])
            for h in range(2)
        ]
    )
    np.testing.assert_allclose(induction.previous_token_score(w), expected_prev)


def test_scores_of_ideal_heads_are_one():
    n, p = 12, 5
    prev = np.eye(n, k=-1)
    prev[0, 0] = 1.0
    assert induction.previous_token_score(prev[None, None]) == pytest.approx([1.0])
    ideal = np.eye(n)  # attends to itself, except on the repeat
    for i in range(p, 2 * p):
        ideal[i] = 0.0
        ideal[i, i - p + 1] = 1.0
    assert induction.prefix_matching_score(ideal[None, None], [p]) == pytest.approx(
        [1.0]
    )


def test_model_is_causal_and_matches_fused_attention():
    torch.manual_seed(0)
    model = induction.AttentionOnlyTransformer(11, 10, 8, 2)
    tokens = torch.randint(11, (3, 10))
    logits, weights = model(tokens)
    assert logits.shape == (3, 10, 11) and len(weights) == 2
    for w in weights:
        assert (w.triu(1) == 0).all()
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 2, 10))
    # A later token never changes an earlier prediction: the whole model is causal.
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 11
    torch.testing.assert_close(model(changed)[0][:, :6], logits[:, :6])
    with torch.no_grad():  # the full forward pass, written with torch's fused SDPA
        x = model.embed(tokens) + model.pos_embed(torch.arange(10))
        for layer in range(2):
            q, k, v = (
                (x @ W[layer]).view(3, 10, 2, 4).transpose(1, 2)
                for W in (model.W_Q, model.W_K, model.W_V)
            )
            heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + heads.transpose(1, 2).reshape(3, 10, 8) @ model.W_O[layer]
        torch.testing.assert_close(model.unembed(x), logits)


def test_ablating_every_head_leaves_the_direct_path():
    torch.manual_seed(1)
    model = induction.AttentionOnlyTransformer(7, 6, 8, 2)
    tokens = torch.randint(7, (2, 6))
    every = [(layer, h) for layer in range(2) for h in range(2)]
    logits, _ = model(tokens, ablate=every)
    direct = model.unembed(model.embed(tokens) + model.pos_embed(torch.arange(6)))
    torch.testing.assert_close(logits, direct)


def test_copying_score_of_a_copying_and_an_anti_copying_head():
    torch.manual_seed(2)
    model = induction.AttentionOnlyTransformer(6, 4, 6, 1, num_layers=1)
    with torch.no_grad():
        model.embed.weight.copy_(torch.eye(6))
        model.unembed.weight.copy_(torch.eye(6))
        model.W_V[0].copy_(torch.eye(6))
        model.W_O[0].copy_(torch.eye(6))
        assert induction.copying_score(model, 0, 0) == pytest.approx(1.0)
        model.W_O[0].copy_(-torch.eye(6))
        assert induction.copying_score(model, 0, 0) == pytest.approx(-1.0)


def test_train_is_seeded_and_rejects_unknown_keys():
    small = {"steps": 20, "eval_every": 10, "eval_size": 8}
    a = induction.train(small, progress=None)
    b = induction.train(small, progress=None)
    assert a["step"] == [0, 10, 20]
    assert a["repeat_loss"] == b["repeat_loss"]
    assert a["example_weights"].shape == (3, 2, 2, 32, 32)
    with pytest.raises(ValueError, match="unknown config keys"):
        induction.train({"step": 5})
