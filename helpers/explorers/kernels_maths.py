"""The maths of lesson 12's explorers: random features and a fixed-size memory.

Pure, seeded NumPy, importable without ipywidgets or matplotlib:

- ``positive_random_features``: the Performer's positive random features,
  phi(x) = exp(W x - |x|^2 / 2) / sqrt(r), whose dot products estimate exp(q . k)
  without bias;
- ``random_feature_attention``: one batch of queries and keys, the exact softmax
  kernel exp(q . k / sqrt(d_k)) and its estimate from r features, the weights of
  both and their errors (``RandomFeaturesExplorer``);
- ``recall_errors``: store m key -> value pairs in softmax attention (a cache of
  every pair), in linear attention (the state sum_i k_i v_i^T) and with the delta
  rule, then read each value back by its key (``RecallExplorer``).

Never imports torch.
"""

import math

import numpy as np

from helpers import _validate as validate
from helpers import attention_np as anp
from helpers._arrays import check_seed

RECALL_SCALE = 30.0  # the softmax's scale on unit-norm keys: a sharp lookup


def positive_random_features(X, W):
    """phi(x) = exp(W x - |x|^2 / 2) / sqrt(r), so that E[phi(q) . phi(k)] = exp(q . k).

    The rows of W are drawn from N(0, I). exp(W x) is positive, so every
    estimated similarity is positive and the normaliser Z cannot vanish.

    Shapes:
        X: (..., rows, d)  W: (r, d)  returns (..., rows, r)
    """
    X, W = np.asarray(X, dtype=np.float64), np.asarray(W, dtype=np.float64)
    if X.ndim < 1 or W.ndim != 2 or W.shape[1] != X.shape[-1]:
        raise ValueError(
            f"W must have shape (r, d) with d = X's last axis; got X {X.shape}, "
            f"W {W.shape}"
        )
    r = W.shape[0]
    half_norm = (X**2).sum(axis=-1, keepdims=True) / 2  # (..., rows, 1)
    return np.exp(X @ W.T - half_norm) / math.sqrt(r)  # (..., rows, r)


def random_feature_attention(num_features, sigma=0.5, seed=0, n=6, m=12, d_k=8):
    """The softmax kernel of random q, k and its estimate from ``num_features``.

    q and k have entries N(0, sigma^2); both are scaled by d_k^(-1/4) so that
    exp(q' . k') = exp(q . k / sqrt(d_k)), the softmax's similarity. The same
    seed gives the same q, k and the first r rows of the same W for every r.

    Returns a dict: the values; exact and estimate (n, m) kernels; weights and
    weights_estimate (n, m), each row normalised by its Z; kernel_error (the
    mean relative error of the kernel); weight_error (the largest absolute error
    of a weight).
    """
    num_features = validate.positive_int("num_features", num_features)
    seed = check_seed(seed)
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive number; got {sigma}")
    rng = np.random.default_rng(seed)
    Q = sigma * rng.standard_normal((n, d_k))  # (n, d_k)
    K = sigma * rng.standard_normal((m, d_k))  # (m, d_k)
    W = np.random.default_rng([seed, 1]).standard_normal((num_features, d_k))
    scale = d_k**-0.25  # q' . k' = q . k / sqrt(d_k)
    exact = np.exp(Q @ K.T / math.sqrt(d_k))  # (n, m)
    phi_q = positive_random_features(Q * scale, W)  # (n, r)
    phi_k = positive_random_features(K * scale, W)  # (m, r)
    estimate = phi_q @ phi_k.T  # (n, m)
    weights = anp.softmax(Q @ K.T / math.sqrt(d_k))  # (n, m)
    weights_estimate = estimate / estimate.sum(axis=-1, keepdims=True)  # (n, m)
    return {
        "num_features": num_features,
        "sigma": sigma,
        "seed": seed,
        "exact": exact,
        "estimate": estimate,
        "weights": weights,
        "weights_estimate": weights_estimate,
        "kernel_error": float(np.mean(np.abs(estimate - exact) / exact)),
        "weight_error": float(np.abs(weights_estimate - weights).max()),
    }


def unit_rows(X):
    """Each row divided by its norm (DeltaNet's L2-normalised keys)."""
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def _relative_error(got, want):
    return np.linalg.norm(got - want, axis=-1) / np.linalg.norm(want, axis=-1)


def recall_errors(m, d_k=16, seed=0, d_v=8):
    """Write m key -> value pairs, read each value back by its key; the errors.

    Keys are random and unit-norm (linearly independent up to m = d_k, never
    orthogonal); values N(0, 1). The three memories:

    - softmax: attention over the cache of all m pairs, scores k_i . k_j * 30
      (a sharp lookup, as a trained model's);
    - linear: the state S = sum_i k_i v_i^T (linear attention with the identity
      feature map and no normaliser), read as S^T k_i;
    - delta: the delta rule at beta = 1, written once in order, read as S^T k_i.

    Returns a dict: m, d_k, d_v, seed; ``errors``: method -> (m,) relative
    errors |recalled - v_i| / |v_i| in the order written; ``mean``: method ->
    the mean; cache_numbers m (d_k + d_v) and state_numbers d_k d_v.
    """
    m = validate.positive_int("m", m)
    d_k = validate.positive_int("d_k", d_k)
    seed = check_seed(seed)
    rng = np.random.default_rng([seed, m, d_k])
    K = unit_rows(rng.standard_normal((m, d_k)))  # (m, d_k)
    V = rng.standard_normal((m, d_v))  # (m, d_v)
    recalled_softmax = anp.softmax(K @ K.T * RECALL_SCALE) @ V  # (m, d_v)
    recalled_linear = K @ (K.T @ V)  # (m, d_v): S = K^T V, read S^T k_i
    S = np.zeros((d_k, d_v))  # (d_k, d_v)
    for k, v in zip(K, V, strict=True):
        S = S + np.outer(k, v - S.T @ k)  # read S^T k, then write (beta = 1)
    recalled_delta = K @ S  # (m, d_v)
    errors = {
        "softmax": _relative_error(recalled_softmax, V),
        "linear": _relative_error(recalled_linear, V),
        "delta": _relative_error(recalled_delta, V),
    }
    return {
        "m": m,
        "d_k": d_k,
        "d_v": d_v,
        "seed": seed,
        "errors": errors,
        "mean": {name: float(e.mean()) for name, e in errors.items()},
        "cache_numbers": m * (d_k + d_v),
        "state_numbers": d_k * d_v,
    }
