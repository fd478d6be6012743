"""Fixtures shared by the helper tests.

``attn`` runs a test once per attention module (NumPy and PyTorch): it gives
the module's functions, a converter from a NumPy array to that module's array
type, and a converter back, so that one test body checks both modules.

``reference`` is an explicit loop over batch, queries and keys in float64,
written without vectorisation, the independent answer the helpers must match.
"""

import itertools
import math

import numpy as np
import pytest
import torch

from helpers import attention_np, attention_torch


def to_numpy(x):
    """A NumPy copy of a torch tensor or array-like (detached, on the CPU)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


class Backend:
    """One attention module plus converters to and from its array type."""

    def __init__(self, name, module, convert):
        self.name = name
        self.module = module
        self._convert = convert

    def __repr__(self):
        return f"Backend({self.name})"

    def __getattr__(self, attr):
        return getattr(self.module, attr)

    def arr(self, x, dtype=None):
        """Convert a NumPy array (or nested list) to this module's array type."""
        x = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
        return self._convert(x)

    @staticmethod
    def np(x):
        return to_numpy(x)

    def dtype_name(self, x):
        """'float32', 'float64', ... for an ndarray or a tensor alike."""
        return str(x.dtype).replace("torch.", "")


BACKENDS = {
    "numpy": Backend("numpy", attention_np, lambda x: x.copy()),
    "torch": Backend("torch", attention_torch, lambda x: torch.from_numpy(x.copy())),
}


@pytest.fixture(params=sorted(BACKENDS))
def attn(request):
    """The NumPy and the PyTorch attention module, one after the other."""
    return BACKENDS[request.param]


def reference_attention(Q, K, V, mask=None, scale=None):
    """softmax(Q K^T * scale, masked) V as explicit loops in float64.

    Batch axes broadcast; a fully masked query row gives zero weights and a zero
    output row. Returns (output, weights) as float64 ndarrays.
    """
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    n, d_k = Q.shape[-2:]
    m, d_v = V.shape[-2:]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    scale = 1 / math.sqrt(d_k) if scale is None else scale
    full = batch + (n, m)
    mask = np.ones(full, bool) if mask is None else np.broadcast_to(mask, full)
    Qb = np.broadcast_to(Q, batch + (n, d_k))
    Kb = np.broadcast_to(K, batch + (m, d_k))
    Vb = np.broadcast_to(V, batch + (m, d_v))
    out = np.zeros(batch + (n, d_v))
    weights = np.zeros(full)
    for b in itertools.product(*(range(s) for s in batch)):
        for i in range(n):
            keys = [j for j in range(m) if mask[b + (i, j)]]
            if not keys:
                continue
            scores = {
                j: scale * sum(Qb[b + (i, c)] * Kb[b + (j, c)] for c in range(d_k))
                for j in keys
            }
            top = max(scores.values())
            z = sum(math.exp(s - top) for s in scores.values())
            for j in keys:
                w = math.exp(scores[j] - top) / z
                weights[b + (i, j)] = w
                out[b + (i,)] += w * Vb[b + (j,)]
    return out, weights


@pytest.fixture
def reference():
    """The loop reference ``reference_attention(Q, K, V, mask=None, scale=None)``."""
    return reference_attention
