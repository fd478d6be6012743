"""Lesson 10's ``MultiHeadAttention``: multi-head attention as an ``nn.Module``.

Built on the functions of ``attention_torch`` (``split_heads``,
``scaled_dot_product_attention``, ``merge_heads``) and their input checks, with
nn.Linear projections and attention dropout; ``from_torch`` and ``to_torch``
convert to and from ``nn.MultiheadAttention``. Lessons reach it as
``atn.MultiHeadAttention``: ``attention_torch`` re-exports it on first use.
"""

import torch
from torch import nn

from helpers import _validate
from helpers.attention_torch import (
    _as_float,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from helpers.i18n import _

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention as an nn.Module: projections with biases, attention dropout.

    The same computation as ``multi_head_attention``, with nn.Linear projections
    (weights in torch's (out, in) layout, so ``q_proj(x) = x @ W_Q.T + b_Q``).
    ``num_kv_heads`` < num_heads gives grouped-query attention (1: multi-query).
    ``forward`` returns the per-head weights that multiply V: after attention
    dropout while training, as nn.MultiheadAttention does.

    Shapes:
        x: (batch, n, d_model)  kv: (batch, m, d_model)  mask: -> (batch, H, n, m)
        returns out: (batch, n, d_model), weights: (batch, num_heads, n, m)
    """

    def __init__(
        self, d_model, num_heads, *, num_kv_heads=None, bias=True, dropout=0.0
    ):
        super().__init__()
        d_model = _validate.positive_int("d_model", d_model)
        self.d_k = _validate.heads(d_model, num_heads)
        self.num_heads = num_heads
        self.num_kv_heads = _validate.kv_heads(num_heads, num_kv_heads)
        kv_width = self.num_kv_heads * self.d_k
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, kv=None, mask=None):
        """Self-attention over x, or cross-attention from x to kv.

        Shapes:
            x: (batch, n, d_model)  kv: (batch, m, d_model)  mask: -> (batch, H, n, m)
            returns out: (batch, n, d_model), weights: (batch, num_heads, n, m)
        """
        x, kv = self._checked(x, x if kv is None else kv)
        group = self.num_heads // self.num_kv_heads  # query heads per K/V head
        Q = split_heads(self.q_proj(x), self.num_heads)  # (batch, H, n, d_k)
        K = split_heads(self.k_proj(kv), self.num_kv_heads)  # (batch, H_kv, m, d_k)
        V = split_heads(self.v_proj(kv), self.num_kv_heads)  # (batch, H_kv, m, d_k)
        K = K.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k)
        V = V.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k)
        heads_out, weights = scaled_dot_product_attention(Q, K, V, mask=mask)
        if self.training and self.dropout.p > 0:
            weights = self.dropout(weights)  # (batch, H, n, m): drop whole weights
            heads_out = weights @ V  # (batch, H, n, d_k)
        return self.out_proj(merge_heads(heads_out)), weights  # (batch, n, d_model)

    @classmethod
    def from_torch(cls, module):
        """A MultiHeadAttention holding the weights of an nn.MultiheadAttention.

        batch_first does not change the weights (call ours with batch first).
        torch's in_proj_weight (3 d_model, d_model) stacks W_Q, W_K, W_V in
        (out, in) layout, so its three row blocks are our three nn.Linear weights.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(
                _("module must be an nn.MultiheadAttention; got {module!r}").format(
                    module=module
                )
            )
        d_model = module.embed_dim
        if module.kdim != d_model or module.vdim != d_model:
            raise ValueError(
                _(
                    "kdim={kdim} and vdim={vdim} must equal embed_dim={d_model}: "
                    "keys and values come from d_model features"
                ).format(kdim=module.kdim, vdim=module.vdim, d_model=d_model)
            )
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError(_("add_bias_kv and add_zero_attn are not supported"))
        bias = module.in_proj_bias is not None
        ours = cls(d_model, module.num_heads, bias=bias, dropout=module.dropout)
        ours = ours.to(module.in_proj_weight.dtype)
        W_Q, W_K, W_V = module.in_proj_weight.detach().chunk(
            3
        )  # (d_model, d_model) each
        with torch.no_grad():
            for proj, W in zip(ours._projections(), (W_Q, W_K, W_V), strict=True):
                proj.weight.copy_(W)
            ours.out_proj.weight.copy_(module.out_proj.weight)
            if bias:
                b_Q, b_K, b_V = module.in_proj_bias.detach().chunk(3)
                for proj, b in zip(ours._projections(), (b_Q, b_K, b_V), strict=True):
                    proj.bias.copy_(b)
                ours.out_proj.bias.copy_(module.out_proj.bias)
        return ours.train(module.training)

    def to_torch(self, batch_first=True):
        """An nn.MultiheadAttention holding these weights (no grouped-query heads)."""
        if self.num_kv_heads != self.num_heads:
            raise ValueError(
                _(
                    "nn.MultiheadAttention has no grouped-query attention: "
                    "num_kv_heads={num_kv_heads} must equal num_heads={num_heads}"
                ).format(num_kv_heads=self.num_kv_heads, num_heads=self.num_heads)
            )
        bias = self.q_proj.bias is not None
        theirs = nn.MultiheadAttention(
            self.q_proj.in_features,
            self.num_heads,
            dropout=self.dropout.p,
            bias=bias,
            batch_first=batch_first,
        ).to(self.q_proj.weight.dtype)
        with torch.no_grad():
            weights = [proj.weight for proj in self._projections()]
            theirs.in_proj_weight.copy_(torch.cat(weights))  # (3 d_model, d_model)
            theirs.out_proj.weight.copy_(self.out_proj.weight)
            if bias:
                biases = [proj.bias for proj in self._projections()]
                theirs.in_proj_bias.copy_(torch.cat(biases))  # (3 d_model,)
                theirs.out_proj.bias.copy_(self.out_proj.bias)
        return theirs.train(self.training)

    def _checked(self, x, kv):
        """x and kv as float tensors (NaN/inf reported) of shape (batch, *, d_model)."""
        x, kv = _as_float(x, "x"), _as_float(kv, "kv")
        _validate.mha_shapes(tuple(x.shape), tuple(kv.shape), {})
        if x.shape[-1] != self.q_proj.in_features:
            raise ValueError(
                _(
                    "x has d_model={got} features but this module was "
                    "built for d_model={built} (x {shape})"
                ).format(
                    got=x.shape[-1],
                    built=self.q_proj.in_features,
                    shape=_validate.fmt(x.shape),
                )
            )
        return x, kv

    def _projections(self):
        return self.q_proj, self.k_proj, self.v_proj
