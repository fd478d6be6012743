"""Lesson 11: a two-layer attention-only transformer and its induction heads.

The data are random tokens whose first ``P`` tokens repeat right after them;
the model is token and position embeddings, two causal multi-head attention
layers written with the course's own attention functions, and an unembedding.
The scores follow Olsson et al. (2022): a head's *prefix-matching* score is its
attention from each token of the repeat to the token right after that token's
first occurrence; its *previous-token* score is its attention to the token
just before.

Shapes: tokens (batch, seq_len); attention weights (batch, num_heads, n, n).
"""

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from helpers import attention_torch as atn
from helpers.i18n import _

DEFAULT_CONFIG = {
    "vocab_size": 32,  # random tokens 0..31
    "seq_len": 32,  # tokens per sequence
    "min_repeat": 8,  # the repeated prefix has P tokens, min_repeat <= P <= max_repeat
    "max_repeat": 16,
    "d_model": 32,
    "num_heads": 2,
    "num_layers": 2,
    "steps": 1000,
    "batch_size": 32,
    "lr": 3e-3,
    "seed": 0,
    "eval_every": 50,  # steps between measurements (and saved attention maps)
    "eval_size": 64,  # held-out sequences measured at each checkpoint
}


def repeated_sequences(
    batch_size, seq_len, vocab_size, min_repeat, max_repeat, *, generator
):
    """Random tokens whose first P tokens repeat at once; returns (tokens, P).

    Row b holds P_b random tokens, the same P_b tokens again, then fresh random
    tokens up to ``seq_len``. P_b is uniform in [min_repeat, max_repeat], so no
    fixed position holds the repeat: only the tokens themselves say where it is.

    Shapes: tokens (batch_size, seq_len) int64; repeat lengths (batch_size,).
    """
    if not 1 <= min_repeat <= max_repeat or 2 * max_repeat > seq_len:
        raise ValueError(
            _(
                "need 1 <= min_repeat <= max_repeat and 2 * max_repeat <= "
                "seq_len; got min_repeat={min_repeat}, "
                "max_repeat={max_repeat}, seq_len={seq_len}"
            ).format(min_repeat=min_repeat, max_repeat=max_repeat, seq_len=seq_len)
        )
    tokens = torch.randint(vocab_size, (batch_size, seq_len), generator=generator)
    lengths = torch.randint(
        min_repeat, max_repeat + 1, (batch_size,), generator=generator
    )
    for b, p in enumerate(lengths.tolist()):
        tokens[b, p : 2 * p] = tokens[b, :p]
    return tokens, lengths


def _repeat_positions(lengths):
    """(row, position) index pairs of the second copy, as two 1-D arrays."""
    rows, positions = [], []
    for b, p in enumerate(np.asarray(lengths).tolist()):
        rows += [b] * p
        positions += list(range(p, 2 * p))
    return np.array(rows), np.array(positions)


def prefix_matching_score(weights, lengths):
    """Per-head mean attention from each repeated token i to i - P + 1.

    Position i - P + 1 holds the token that followed the first occurrence of the
    token at i: attending there, and copying it, predicts the next token.

    Shapes: weights (batch, num_heads, n, n), lengths (batch,) -> (num_heads,).
    """
    w = np.asarray(weights, dtype=np.float64)
    rows, i = _repeat_positions(lengths)
    p = np.asarray(lengths)[rows]
    return w[rows, :, i, i - p + 1].mean(axis=0)  # (num_heads,)


def previous_token_score(weights):
    """Per-head mean attention from each token (but the first) to the one before it.

    Shapes: weights (batch, num_heads, n, n) -> (num_heads,).
    """
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[-1]
    i = np.arange(1, n)
    return w[:, :, i, i - 1].mean(axis=(0, 2))  # (num_heads,)


def repeat_loss(logits, tokens, lengths):
    """Mean cross-entropy of the predictable tokens of the repeat.

    Position i of the second copy (i from P to 2P - 2) predicts token i + 1,
    which repeats token i + 1 - P. The first P tokens are random: no model can
    predict them better than 1 / vocab_size.

    Shapes: logits (batch, n, vocab), tokens (batch, n), lengths (batch,) -> ().
    """
    rows, i = _repeat_positions(lengths)
    keep = (
        i < 2 * np.asarray(lengths)[rows] - 1
    )  # the last repeated token predicts noise
    rows, i = torch.as_tensor(rows[keep]), torch.as_tensor(i[keep])
    return F.cross_entropy(logits[rows, i], tokens[rows, i + 1])


class AttentionOnlyTransformer(nn.Module):
    """Embeddings, causal multi-head attention layers with residuals, unembedding.

    No MLPs and no layer norm, as in Elhage et al. (2021): every path from the
    input to the logits goes through attention or the residual stream.
    """

    def __init__(self, vocab_size, seq_len, d_model, num_heads, num_layers=2):
        super().__init__()
        self.num_heads = num_heads
        self.embed = nn.Embedding(vocab_size, d_model)  # W_E
        self.pos_embed = nn.Embedding(seq_len, d_model)
        std = 1 / math.sqrt(d_model)
        self.W_Q, self.W_K, self.W_V, self.W_O = (
            nn.ParameterList(
                nn.Parameter(torch.randn(d_model, d_model) * std)
                for _ in range(num_layers)
            )
            for _ in range(4)
        )  # each (d_model, d_model) per layer, applied as x @ W
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)  # W_U

    def forward(self, tokens, ablate=()):
        """Logits (batch, n, vocab) and each layer's weights (batch, H, n, n).

        ``ablate``: (layer, head) pairs whose output is replaced by zeros.
        """
        n = tokens.shape[1]
        x = self.embed(tokens) + self.pos_embed(torch.arange(n))  # (batch, n, d_model)
        mask = atn.causal_mask(n)  # (n, n)  True = may attend
        weights = []
        for layer in range(len(self.W_Q)):
            Q, K, V = (
                atn.split_heads(x @ W[layer], self.num_heads)  # (batch, H, n, d_k)
                for W in (self.W_Q, self.W_K, self.W_V)
            )
            heads, w = atn.scaled_dot_product_attention(Q, K, V, mask=mask)
            for ablated_layer, head in ablate:
                if ablated_layer == layer:
                    heads = heads.clone()
                    heads[:, head] = 0.0
            x = x + atn.merge_heads(heads) @ self.W_O[layer]  # (batch, n, d_model)
            weights.append(w)
        return self.unembed(x), weights


def copying_score(model, layer, head):
    """How much a head's OV circuit copies the token it attends to, in [-1, 1].

    The full OV circuit W_E W_V^h W_O^h W_U maps an attended token to the change
    in every output logit; it copies when its eigenvalues are mostly positive.
    The score is sum(eigenvalues) / sum(|eigenvalues|), as in Elhage et al.
    (2021). This is the *direct* path, from the attended token's own
    embedding; a head also reads position embeddings and earlier heads' writes
    from the residual stream, which this score leaves out.
    """
    d_k = model.W_V[layer].shape[1] // model.num_heads
    cols = slice(head * d_k, (head + 1) * d_k)
    with torch.no_grad():
        circuit = (
            model.embed.weight  # (vocab, d_model)
            @ model.W_V[layer][:, cols]  # (d_model, d_k)
            @ model.W_O[layer][cols, :]  # (d_k, d_model)
            @ model.unembed.weight.T  # (d_model, vocab)
        ).double()
    eig = torch.linalg.eigvals(circuit)
    return (eig.sum().real / eig.abs().sum()).item()


def measure(model, tokens, lengths, ablate=()):
    """Losses and per-head scores of ``model`` on a held-out batch."""
    with torch.no_grad():
        logits, weights = model(tokens, ablate=ablate)
        vocab = logits.shape[-1]
        loss = F.cross_entropy(
            logits[:, :-1].reshape(-1, vocab), tokens[:, 1:].reshape(-1)
        )
        return {
            "loss": loss.item(),
            "repeat_loss": repeat_loss(logits, tokens, lengths).item(),
            "prefix_matching": np.stack(
                [prefix_matching_score(w, lengths) for w in weights]
            ),
            "previous_token": np.stack([previous_token_score(w) for w in weights]),
            "weights": weights,
        }


def _reject_unknown_keys(config):
    """Raise ValueError for a key of ``config`` that DEFAULT_CONFIG does not have."""
    unknown = set(config or {}) - set(DEFAULT_CONFIG)
    if unknown:
        raise ValueError(
            _("unknown config keys {unknown}; valid: {valid}").format(
                unknown=sorted(unknown), valid=sorted(DEFAULT_CONFIG)
            )
        )


def train(config=None, *, progress=print, example=None):
    """Train an AttentionOnlyTransformer; return its history of measurements.

    ``config`` overrides entries of DEFAULT_CONFIG. Every ``eval_every`` steps
    the model is measured on a fixed held-out batch; ``example`` (tokens of
    shape (1, seq_len), default: the first held-out sequence) gets its
    attention weights saved, layer by layer. ``progress`` receives one line of
    text per checkpoint (pass ``None`` for silence).
    """
    _reject_unknown_keys(config)
    c = {**DEFAULT_CONFIG, **(config or {})}
    torch.manual_seed(c["seed"])
    model = AttentionOnlyTransformer(
        c["vocab_size"], c["seq_len"], c["d_model"], c["num_heads"], c["num_layers"]
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=c["lr"])
    data = torch.Generator().manual_seed(c["seed"] + 1)
    shape = (c["seq_len"], c["vocab_size"], c["min_repeat"], c["max_repeat"])
    held_out = repeated_sequences(
        c["eval_size"], *shape, generator=torch.Generator().manual_seed(12345)
    )
    if example is None:
        example = held_out[0][:1]
    history = {
        "config": c,
        "step": [],
        "loss": [],
        "repeat_loss": [],
        "prefix_matching": [],
        "previous_token": [],
        "example_weights": [],
    }
    for step in range(c["steps"] + 1):
        if step % c["eval_every"] == 0:
            _record(history, step, model, held_out, example, progress)
        if step == c["steps"]:
            break
        tokens, _ = repeated_sequences(c["batch_size"], *shape, generator=data)
        logits, _ = model(tokens)
        loss = F.cross_entropy(
            logits[:, :-1].reshape(-1, c["vocab_size"]), tokens[:, 1:].reshape(-1)
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    for key in ("prefix_matching", "previous_token", "example_weights"):
        history[key] = np.stack(history[key])
    history["model"] = model
    history["held_out"] = held_out
    return history


def _record(history, step, model, held_out, example, progress):
    """Measure the model at one checkpoint and append to ``history``."""
    result = measure(model, *held_out)
    with torch.no_grad():
        _logits, example_weights = model(example)
    history["step"].append(step)
    for key in ("loss", "repeat_loss", "prefix_matching", "previous_token"):
        history[key].append(result[key])
    history["example_weights"].append(np.stack([w[0].numpy() for w in example_weights]))
    if progress is not None:
        best = result["prefix_matching"][-1].max()
        line = _(
            "step {step:4d} · loss {loss:.2f} · loss on the repeat "
            "{repeat_loss:.2f} · best layer-2 prefix matching {best:.2f}"
        )
        progress(
            line.format(
                step=step,
                loss=result["loss"],
                repeat_loss=result["repeat_loss"],
                best=best,
            )
        )
