"""Property tests: random shapes and masks, NumPy vs PyTorch vs torch itself.

Hypothesis draws the shapes (batch axes 0-2, n and m 1..7, d_k and d_v 1..8,
lengths of 1 included), the mask pattern and a seed; the numbers come from
``np.random.default_rng(seed)``, so every example is reproducible and cheap.
References: torch.nn.functional.scaled_dot_product_attention (boolean
attn_mask, True = attend) and torch.nn.MultiheadAttention with the weights
copied in.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import attention_np as anp
from helpers import attention_torch as atn

# Fast and deterministic: the same examples on every run, no database on disk.
FAST = settings(max_examples=30, deadline=None, derandomize=True, database=None)

MODULES = {"numpy": anp, "torch": atn}

batch_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
sizes = st.integers(1, 7)
features = st.integers(1, 8)
seeds = st.integers(0, 2**32 - 1)
mask_kinds = st.sampled_from(["none", "random", "with_empty_rows", "causal", "keys"])


def make_mask(kind, batch, n, m, rng):
    """A boolean mask (True = may attend) of a shape broadcastable to the scores."""
    if kind == "none":
        return None
    if kind == "causal":
        return anp.causal_mask(n, m)  # n > m leaves the first rows empty
    if kind == "keys":  # one row of keys per batch entry, broadcast over queries
        mask = rng.random((*batch, 1, m)) < 0.7
        mask[..., 0] = True
        return mask
    mask = rng.random((*batch, n, m)) < 0.6
    if kind == "random":
        mask[..., rng.integers(m)] = True  # every row keeps at least one key
    else:
        mask[..., rng.integers(n), :] = False  # at least one row sees nothing
    return mask


def draw_qkv(rng, batch, n, m, d_k, d_v):
    Q = rng.standard_normal((*batch, n, d_k))
    K = rng.standard_normal((*batch, m, d_k))
    V = rng.standard_normal((*batch, m, d_v))
    return Q, K, V


def torch_sdpa(Q, K, V, mask=None):
    """torch's SDPA output, and its weights read off by attending to V = I_m."""
    Q, K, V = (torch.as_tensor(x) for x in (Q, K, V))
    mask = None if mask is None else torch.as_tensor(mask)
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    eye = torch.eye(K.shape[-2], dtype=K.dtype)
    weights = F.scaled_dot_product_attention(Q, K, eye, attn_mask=mask)
    return out.numpy(), weights.numpy()


def as_numpy(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


@FAST
@given(batch_shapes, sizes, sizes, features, features, mask_kinds, seeds)
def test_sdpa_numpy_torch_and_torch_sdpa_agree(batch, n, m, d_k, d_v, kind, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = draw_qkv(rng, batch, n, m, d_k, d_v)
    mask = make_mask(kind, batch, n, m, rng)
    out_ref, w_ref = torch_sdpa(Q, K, V, mask)
    for name, mod in MODULES.items():
        out, weights = mod.scaled_dot_product_attention(Q, K, V, mask=mask)
        out, weights = as_numpy(out), as_numpy(weights)
        assert out.shape == (*batch, n, d_v), name
        assert weights.shape == (*batch, n, m), name
        full = np.broadcast_to(True if mask is None else mask, weights.shape)
        assert (weights[~full] == 0).all(), f"{name}: weight on a masked key"
        live = full.any(axis=-1)
        np.testing.assert_allclose(weights.sum(-1), live.astype(float), rtol=1e-12)
        assert (out[~live] == 0).all(), f"{name}: fully masked row is not zero"
        np.testing.assert_allclose(out, out_ref, rtol=1e-10, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(weights, w_ref, rtol=1e-10, atol=1e-12, err_msg=name)


@FAST
@given(batch_shapes, sizes, sizes, features, features, mask_kinds, seeds)
def test_sdpa_float32_agrees_with_float64_reference(batch, n, m, d_k, d_v, kind, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (x.astype(np.float32) for x in draw_qkv(rng, batch, n, m, d_k, d_v))
    mask = make_mask(kind, batch, n, m, rng)
    out_ref, w_ref = torch_sdpa(*(x.astype(np.float64) for x in (Q, K, V)), mask)
    for name, mod in MODULES.items():
        out, weights = mod.scaled_dot_product_attention(Q, K, V, mask=mask)
        out, weights = as_numpy(out), as_numpy(weights)
        assert out.dtype == weights.dtype == np.float32, name
        np.testing.assert_allclose(out, out_ref, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(weights, w_ref, rtol=1e-5, atol=1e-6, err_msg=name)


@FAST
@given(
    batch_shapes,
    sizes,
    sizes,
    features,
    features,
    st.sampled_from(["random", "with_empty_rows", "causal"]),
    seeds,
)
def test_sdpa_gradients_equal_torch_sdpa(batch, n, m, d_k, d_v, kind, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (
        torch.tensor(x, requires_grad=True)
        for x in draw_qkv(rng, batch, n, m, d_k, d_v)
    )
    mask = torch.as_tensor(make_mask(kind, batch, n, m, rng))
    grad_out = torch.as_tensor(rng.standard_normal((*batch, n, d_v)))

    out, _ = atn.scaled_dot_product_attention(Q, K, V, mask=mask)
    ours = torch.autograd.grad((out * grad_out).sum(), (Q, K, V))
    ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    expected = torch.autograd.grad((ref * grad_out).sum(), (Q, K, V))

    empty = ~mask.expand(*batch, n, m).any(dim=-1)  # (*batch, n)
    for g in ours:
        assert torch.isfinite(g).all()
    assert (ours[0][empty] == 0).all(), "a fully masked query must get zero gradient"
    for name, g, e in zip("QKV", ours, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-9, atol=1e-12, msg=f"grad {name}")


def mha_case(draw):
    batch = draw(st.integers(1, 3))
    num_heads = draw(st.integers(1, 4))
    d_head = draw(st.integers(1, 4))
    n = draw(sizes)
    cross = draw(st.booleans())
    m = draw(sizes) if cross else n
    return batch, num_heads, d_head, n, m, cross


@FAST
@given(st.data(), seeds)
def test_multi_head_attention_equals_torch_multiheadattention(data, seed):
    batch, num_heads, d_head, n, m, cross = mha_case(data.draw)
    padded = data.draw(st.booleans())
    d_model = num_heads * d_head
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((batch, n, d_model))
    kv = rng.standard_normal((batch, m, d_model)) if cross else X
    W_Q, W_K, W_V, W_O = (
        rng.standard_normal((d_model, d_model)) / math.sqrt(d_model) for _ in range(4)
    )
    lengths = rng.integers(1, m + 1, size=batch) if padded else np.full(batch, m)

    mha = torch.nn.MultiheadAttention(
        d_model, num_heads, bias=False, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        # ours computes X @ W; nn.Linear computes X @ weight.T
        mha.in_proj_weight.copy_(
            torch.from_numpy(np.concatenate([W_Q.T, W_K.T, W_V.T]))
        )
        mha.out_proj.weight.copy_(torch.from_numpy(W_O.T))
        mask = atn.padding_mask(torch.from_numpy(lengths), m)  # True = attend
        X_t, kv_t = torch.from_numpy(X), torch.from_numpy(kv)
        expected, expected_w = mha(
            X_t,
            kv_t,
            kv_t,
            key_padding_mask=~mask[:, 0, 0, :],  # True = ignore
            need_weights=True,
            average_attn_weights=False,
        )
    kw = {"mask": mask.numpy() if padded else None, "kv": kv if cross else None}
    for name, mod in MODULES.items():
        out, weights = mod.multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, **kw)
        out, weights = as_numpy(out), as_numpy(weights)
        assert out.shape == (batch, n, d_model), name
        assert weights.shape == (batch, num_heads, n, m), name
        np.testing.assert_allclose(
            out, expected.numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )
        np.testing.assert_allclose(
            weights, expected_w.numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )


@FAST
@given(st.data(), seeds)
def test_multi_head_attention_split_heads_is_a_per_head_column_slice(data, seed):
    batch, num_heads, d_head, n, _, _ = mha_case(data.draw)
    x = np.random.default_rng(seed).standard_normal((batch, n, num_heads * d_head))
    for name, mod in MODULES.items():
        heads = as_numpy(mod.split_heads(x, num_heads))
        assert heads.shape == (batch, num_heads, n, d_head), name
        for h in range(num_heads):
            np.testing.assert_array_equal(
                heads[:, h], x[..., h * d_head : (h + 1) * d_head]
            )
        np.testing.assert_array_equal(as_numpy(mod.merge_heads(heads)), x)


@FAST
@given(batch_shapes, sizes, sizes, features, features, mask_kinds, seeds, st.data())
def test_online_attention_equals_reference(batch, n, m, d_k, d_v, kind, seed, data):
    block_size = data.draw(st.integers(1, m + 2), label="block_size")
    rng = np.random.default_rng(seed)
    Q, K, V = draw_qkv(rng, batch, n, m, d_k, d_v)
    mask = make_mask(kind, batch, n, m, rng)
    out_ref, _ = torch_sdpa(Q, K, V, mask)
    for name, mod in MODULES.items():
        out = as_numpy(mod.online_attention(Q, K, V, block_size=block_size, mask=mask))
        assert out.shape == (*batch, n, d_v), name
        assert np.isfinite(out).all(), name
        np.testing.assert_allclose(out, out_ref, rtol=1e-10, atol=1e-12, err_msg=name)


@FAST
@given(sizes, sizes)
def test_causal_mask_is_lower_right_aligned(n, m):
    expected = torch.ones(n, m, dtype=torch.bool).tril(diagonal=m - n).numpy()
    for name, mod in MODULES.items():
        mask = as_numpy(mod.causal_mask(n, m))
        np.testing.assert_array_equal(mask, expected, err_msg=name)
        assert mask[-1].all(), name
        # query i sees exactly min(m, max(0, i + 1 + m - n)) keys
        counts = np.clip(np.arange(n) + 1 + m - n, 0, m)
        np.testing.assert_array_equal(mask.sum(axis=-1), counts, err_msg=name)


# ------------------------------------------------------- lesson 10's helpers


def module_mask(kind, batch, num_heads, n, m, cross, rng):
    """(ours, attn_mask, key_padding_mask): True = may attend for ours, torch's
    attn_mask and key_padding_mask are True = blocked. No row is fully masked."""
    if kind == "causal" and not cross:
        ours = atn.causal_mask(n)  # (n, n)
        return ours, ~ours, None
    if kind == "padding":
        lengths = torch.from_numpy(rng.integers(1, m + 1, size=batch))
        ours = atn.padding_mask(lengths, m)  # (batch, 1, 1, m)
        return ours, None, ~ours[:, 0, 0, :]
    if kind == "per_head":
        ours = torch.from_numpy(rng.random((batch, num_heads, n, m)) < 0.6)
        ours[..., int(rng.integers(m))] = True  # every row keeps a key
        return ours, ~ours.reshape(batch * num_heads, n, m), None
    return None, None, None


@FAST
@given(st.data(), seeds)
def test_module_equals_nn_multiheadattention_with_weights_copied_either_way(data, seed):
    batch, num_heads, d_k, n, m, cross = mha_case(data.draw)
    kind = data.draw(st.sampled_from(["none", "causal", "padding", "per_head"]))
    batch_first = data.draw(st.booleans(), label="batch_first")
    d_model = num_heads * d_k
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed % 2**31)
    x = torch.from_numpy(rng.standard_normal((batch, n, d_model)))
    kv = torch.from_numpy(rng.standard_normal((batch, m, d_model))) if cross else x
    ours_mask, attn_mask, key_padding_mask = module_mask(
        kind, batch, num_heads, n, m, cross, rng
    )
    theirs = torch.nn.MultiheadAttention(
        d_model, num_heads, batch_first=batch_first, dtype=torch.float64
    )
    with torch.no_grad():  # nn.MultiheadAttention starts with zero biases
        theirs.in_proj_bias.normal_()
        theirs.out_proj.bias.normal_()
    theirs.eval()

    def torch_forward(module):
        a, b = (x, kv) if batch_first else (x.transpose(0, 1), kv.transpose(0, 1))
        out, weights = module(
            a,
            b,
            b,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            average_attn_weights=False,
        )
        return (out if batch_first else out.transpose(0, 1)), weights

    expected, expected_w = torch_forward(theirs)
    ours = atn.MultiHeadAttention.from_torch(theirs).eval()
    out, weights = ours(x, kv=kv if cross else None, mask=ours_mask)
    assert out.shape == (batch, n, d_model) and weights.shape == (
        batch,
        num_heads,
        n,
        m,
    )
    torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(weights, expected_w, rtol=1e-10, atol=1e-12)

    # the other way: our (random) weights copied into a fresh nn.MultiheadAttention
    ours = atn.MultiHeadAttention(d_model, num_heads).double().eval()
    out, weights = ours(x, kv=kv if cross else None, mask=ours_mask)
    expected, expected_w = torch_forward(ours.to_torch(batch_first=batch_first))
    torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(weights, expected_w, rtol=1e-10, atol=1e-12)


@FAST
@given(st.data(), seeds)
def test_grouped_query_attention_equals_torch_sdpa_enable_gqa(data, seed):
    batch, num_kv_heads, d_k, n, m, cross = mha_case(data.draw)
    group = data.draw(st.integers(1, 3), label="group")
    kind = data.draw(st.sampled_from(["none", "causal", "padding", "per_head"]))
    num_heads = num_kv_heads * group
    d_model = num_heads * d_k
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((batch, n, d_model))
    kv = rng.standard_normal((batch, m, d_model)) if cross else X
    W_Q, W_O = (rng.standard_normal((d_model, d_model)) for _ in range(2))
    W_K, W_V = (rng.standard_normal((d_model, num_kv_heads * d_k)) for _ in range(2))
    mask, _, _ = module_mask(kind, batch, num_heads, n, m, cross, rng)

    # torch's reference: K and V keep num_kv_heads heads; enable_gqa shares them
    t = {k: torch.from_numpy(a) for k, a in dict(X=X, kv=kv, W_K=W_K, W_V=W_V).items()}
    Q = atn.split_heads(torch.from_numpy(X @ W_Q), num_heads)  # (batch, H, n, d_k)
    K = atn.split_heads(t["kv"] @ t["W_K"], num_kv_heads)  # (batch, H_kv, m, d_k)
    V = atn.split_heads(t["kv"] @ t["W_V"], num_kv_heads)  # (batch, H_kv, m, d_k)
    heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, enable_gqa=True)
    expected = atn.merge_heads(heads).numpy() @ W_O  # (batch, n, d_model)
    eye = torch.eye(m, dtype=torch.float64).expand(batch, num_kv_heads, m, m)
    expected_w = F.scaled_dot_product_attention(
        Q, K, eye, attn_mask=mask, enable_gqa=True
    ).numpy()  # (batch, H, n, m): attending to V = I reads off the weights
    np_mask = None if mask is None else mask.numpy()
    for name, mod in MODULES.items():
        out, weights = mod.multi_head_attention(
            X, W_Q, W_K, W_V, W_O, num_heads, mask=np_mask,
            kv=kv if cross else None, num_kv_heads=num_kv_heads,
        )  # fmt: skip
        np.testing.assert_allclose(
            as_numpy(out), expected, rtol=1e-9, atol=1e-10, err_msg=name
        )
        np.testing.assert_allclose(
            as_numpy(weights), expected_w, rtol=1e-9, atol=1e-12, err_msg=name
        )

    module = atn.MultiHeadAttention(
        d_model, num_heads, num_kv_heads=num_kv_heads, bias=False
    ).double()
    with torch.no_grad():  # nn.Linear holds W.T
        for proj, W in zip(
            (module.q_proj, module.k_proj, module.v_proj, module.out_proj),
            (W_Q, W_K, W_V, W_O),
            strict=True,
        ):
            proj.weight.copy_(torch.from_numpy(W.T))
    out, weights = module(t["X"], kv=t["kv"] if cross else None, mask=mask)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(
        weights.detach().numpy(), expected_w, rtol=1e-9, atol=1e-12
    )


rope_dims = st.integers(1, 8).map(lambda half: 2 * half)
positions = st.integers(-50, 200)


@FAST
@given(batch_shapes, sizes, rope_dims, seeds)
def test_rope_keeps_norms_position_zero_is_identity_and_numpy_equals_torch(
    batch, n, d, seed
):
    x = np.random.default_rng(seed).standard_normal((*batch, n, d))
    rotated = anp.rope(x)  # positions 0..n-1
    np.testing.assert_allclose(
        np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12
    )
    np.testing.assert_array_equal(rotated[..., 0, :], x[..., 0, :])
    np.testing.assert_array_equal(atn.rope(torch.from_numpy(x)).numpy(), rotated)
    if n > 1:  # every later position really turns the vector
        assert not np.allclose(rotated[..., 1:, :], x[..., 1:, :])


@FAST
@given(rope_dims, positions, positions, st.integers(-100, 100), seeds)
def test_rope_dot_product_depends_only_on_the_offset(d, i, j, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 1, d))  # one query and one key, (1, d) each
    for mod in MODULES.values():

        def score(a, b, mod=mod):
            rq = as_numpy(mod.rope(q, positions=np.array([a])))  # (1, d)
            rk = as_numpy(mod.rope(k, positions=np.array([b])))  # (1, d)
            return float(rq[0] @ rk[0])

        at_offset = score(i, j)
        np.testing.assert_allclose(score(i + shift, j + shift), at_offset, atol=1e-9)
        np.testing.assert_allclose(score(i - j, 0), at_offset, atol=1e-9)
