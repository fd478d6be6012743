"""helpers.explorers.kernels_maths: random features and recall, without widgets."""

import math

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.explorers import kernels_maths as km


def test_positive_random_features_are_positive_and_unbiased():
    """Mean of phi(q) . phi(k) over many features: exp(q . k) within 5 std.

    One feature's estimate X = exp(w . s - |q|^2/2 - |k|^2/2), s = q + k, has
    E X = exp(q . k) and Var X = exp(2 q . k) (exp(|s|^2) - 1): the tolerance.
    """
    rng = np.random.default_rng(0)
    q, k = 0.3 * rng.standard_normal((2, 6))
    r = 200_000
    W = rng.standard_normal((r, 6))
    phi_q, phi_k = km.positive_random_features(np.stack([q, k]), W)  # (r,) each
    assert (phi_q > 0).all() and (phi_k > 0).all()
    estimate = phi_q @ phi_k  # the mean over r features (1/sqrt(r) each)
    std = math.exp(q @ k) * math.sqrt(math.expm1((q + k) @ (q + k)) / r)
    assert abs(estimate - math.exp(q @ k)) < 5 * std


def test_positive_random_features_reject_mismatched_shapes():
    with pytest.raises(ValueError, match="W must have shape"):
        km.positive_random_features(np.ones((3, 4)), np.ones((5, 3)))


def test_random_feature_attention_converges_like_one_over_sqrt_r():
    errors = [
        np.mean(
            [km.random_feature_attention(r, seed=s)["kernel_error"] for s in range(8)]
        )
        for r in (16, 256, 4096)
    ]
    slopes = np.diff(np.log(errors)) / np.log(16)
    assert np.all((-0.65 < slopes) & (slopes < -0.35)), slopes
    data = km.random_feature_attention(64)
    np.testing.assert_allclose(data["weights_estimate"].sum(axis=-1), 1.0)
    np.testing.assert_allclose(data["weights"].sum(axis=-1), 1.0)


def test_random_feature_attention_is_seeded_and_shares_features_across_r():
    a = km.random_feature_attention(8, seed=3)
    b = km.random_feature_attention(8, seed=3)
    np.testing.assert_array_equal(a["estimate"], b["estimate"])
    np.testing.assert_array_equal(
        a["exact"], km.random_feature_attention(64, seed=3)["exact"]
    )
    with pytest.raises(ValueError, match="num_features"):
        km.random_feature_attention(0)
    with pytest.raises(ValueError, match="sigma"):
        km.random_feature_attention(4, sigma=-1.0)


def test_recall_errors_against_the_memories_written_out():
    data = km.recall_errors(m=6, d_k=8, seed=1)
    rng = np.random.default_rng([1, 6, 8])
    K = rng.standard_normal((6, 8))
    K /= np.linalg.norm(K, axis=1, keepdims=True)
    V = rng.standard_normal((6, 8))
    recalled = anp.delta_rule(K, K, V, 1.0)  # query t = key t: S^T k_t after writing t
    np.testing.assert_allclose(recalled[-1], V[-1], atol=1e-12)
    assert data["errors"]["delta"][-1] < 1e-12  # the last pair written: exact
    np.testing.assert_allclose(
        data["errors"]["linear"],
        np.linalg.norm(K @ K.T @ V - V, axis=1) / np.linalg.norm(V, axis=1),
    )
    assert data["mean"]["softmax"] < 1e-3
    # over seeds, the delta rule's correction leaves less crosstalk than the sum
    means = [km.recall_errors(m=12, d_k=16, seed=s)["mean"] for s in range(10)]
    assert np.mean([x["delta"] for x in means]) < np.mean([x["linear"] for x in means])
    assert data["cache_numbers"] == 6 * (8 + 8) and data["state_numbers"] == 64


def test_recall_of_one_pair_is_exact_everywhere():
    data = km.recall_errors(m=1)
    for errors in data["errors"].values():
        assert errors[0] < 1e-12


def test_recall_softmax_blurs_at_small_d_k():
    """The RecallExplorer's caveat: a fixed scale of 30 blurs 64 keys in 4 dims."""
    mean = {
        d: np.mean([km.recall_errors(64, d, s)["mean"]["softmax"] for s in range(5)])
        for d in (4, 8, 16)
    }
    assert mean[4] > 0.2
    assert mean[8] < 0.01 and mean[16] < 1e-3


def test_random_feature_error_at_sigma_one_is_not_yet_one_over_sqrt_r():
    """Inputs with sigma = 1: e^||q'+k'||^2 is ~290 on average, so r <= 4096 is
    still short of the 1/sqrt(r) regime (the lesson's section 4)."""
    r = [16, 256, 4096]
    errors = [
        np.mean(
            [
                km.random_feature_attention(x, sigma=1.0, seed=s)["kernel_error"]
                for s in range(8)
            ]
        )
        for x in r
    ]
    slope = np.polyfit(np.log(r), np.log(errors), 1)[0]
    assert -0.4 < slope < -0.2, slope
