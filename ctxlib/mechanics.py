"""One Transformer block taken apart, on a shipped model's own weights (Vaswani et al. 2017, "Attention Is All You
Need"; pre-LN blocks as in ctxlib.models.bert): every intermediate of one layer and one head, as numpy arrays.

    H = LN1(X);  Q = H W_Q + b_Q,  K = H W_K + b_K,  V = H W_V + b_V   (one head: d_k columns of each)
    Q, K <- rotate(Q), rotate(K)                                        (rotary positions only)
    A = softmax(mask(Q K^T / sqrt(d_k)));  head = A V
    X' = X + concat(head_1..head_h) W_O^T + b_O;  out = X' + W_2 GELU(W_1 LN2(X') + b_1) + b_2

`trace_block` recomputes the embeddings and every block up to the chosen one from the weights with plain tensor
operations (no call into the model's modules), so the tests can hold the numbers against the model's own forward
pass. `rotary_by_distance`, `sinusoidal_table`, `position_scheme` and `repeated_char_check` are the positions step:
which scheme the model uses, and what that means for its embedding layer (measured, not asserted).
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .models.bert import rotate
from .tokens import char_tokens

MAX_CHARS = 40  # characters the page takes: a (T, T) heatmap stays readable
ROPE_BASE = 10000.0  # ctxlib.models.bert.rotate's default base

FORMULAS = {  # one formula per step (LaTeX; the same in every language)
    "qkv": r"H = \mathrm{LN}_1(X),\quad Q = H W_Q + b_Q,\quad K = H W_K + b_K,\quad V = H W_V + b_V",
    "scores": r"S = \frac{Q K^\top}{\sqrt{d_k}}",
    "mask": r"S'_{ij} = \begin{cases} S_{ij} & j \le i \\ -\infty & j > i \end{cases}",
    "softmax": r"A_{ij} = \frac{e^{S'_{ij}}}{\sum_{j'} e^{S'_{ij'}}}",
    "weighted": r"\mathrm{head}_i = \sum_j A_{ij} V_j",
    "concat": r"\mathrm{MultiHead}(X) = [\mathrm{head}_1;\dots;\mathrm{head}_h]\, W_O^\top + b_O",
    "ffn": r"X' = X + \mathrm{MultiHead}(X),\quad \mathrm{out} = X' + W_2\,\mathrm{GELU}(W_1\,\mathrm{LN}_2(X') + b_1) + b_2",
    "positions": r"PE_{p,2i} = \sin\frac{p}{10000^{2i/d}},\ PE_{p,2i+1} = \cos\frac{p}{10000^{2i/d}};\quad"
    r"\ \mathrm{RoPE}: \langle R_m q, R_n k\rangle = \langle q, R_{n-m} k\rangle",
}


class MechanicsInputError(ValueError):
    """A sentence the page cannot take apart; `code` names the message (empty, too_long, control, unknown)."""

    def __init__(self, code: str, message: str, **values):
        super().__init__(message)
        self.code, self.values = code, values


@dataclass
class BlockTrace:
    """Every intermediate of block `layer` (0-based) for head `head` (0-based); T tokens, width D, head width d."""

    tokens: list[str]
    layer: int
    head: int
    causal: bool
    rotary: bool
    x: np.ndarray  # (T, D) the block's input: the residual stream
    ln1: np.ndarray  # (T, D) LN1(X)
    w_q: np.ndarray  # (D, d) this head's columns of W_Q (so Q = LN1(X) @ w_q + b_q)
    w_k: np.ndarray  # (D, d)
    w_v: np.ndarray  # (D, d)
    b_qkv: np.ndarray  # (3, d) this head's biases of Q, K, V
    q_raw: np.ndarray  # (T, d) before rotation
    k_raw: np.ndarray  # (T, d)
    q: np.ndarray  # (T, d) after rotation (= q_raw without rotary positions)
    k: np.ndarray  # (T, d)
    v: np.ndarray  # (T, d)
    scores: np.ndarray  # (T, T) Q K^T / sqrt(d)
    keep: np.ndarray  # (T, T) bool: key j visible from query i (causal: j <= i)
    masked: np.ndarray  # (T, T) scores with -inf where not kept
    weights: np.ndarray  # (T, T) softmax rows
    head_out: np.ndarray  # (T, d) weights @ V
    heads: np.ndarray  # (T, D) all heads' outputs side by side
    w_o: np.ndarray  # (D, D) the output projection (as stored: out = heads @ w_o.T + b_o)
    attn_out: np.ndarray  # (T, D) heads @ W_O^T + b_O
    resid: np.ndarray  # (T, D) X + attn_out
    ln2: np.ndarray  # (T, D) LN2(resid)
    ffn_hidden: np.ndarray  # (T, ffn) GELU(W_1 LN2 + b_1)
    ffn_out: np.ndarray  # (T, D)
    out: np.ndarray  # (T, D) the block's output: resid + ffn_out
    hidden: np.ndarray  # (T, D) what the model returns for this layer (the last one: after the final LayerNorm)


def check_text(text: str, max_chars: int = MAX_CHARS) -> str:
    """The sentence stripped, or MechanicsInputError: empty, longer than `max_chars`, or holding control characters."""
    text = (text or "").strip()
    if not text:
        raise MechanicsInputError("empty", "the sentence is empty; type one, e.g. 苹果很好吃")
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise MechanicsInputError("control", "the sentence holds control characters; type plain text")
    if len(text) > max_chars:
        raise MechanicsInputError(
            "too_long",
            f"the sentence is {len(text)} characters long; this view takes at most {max_chars}",
            n=len(text),
            max=max_chars,
        )
    return text


def token_ids(enc, text: str) -> tuple[list[str], list[int]]:
    """(tokens, ids) as the encoder feeds the model: [CLS] chars [SEP] for BERT, [CLS] chars for GPT."""
    tok = enc.tokenizer
    chars = [t for t, _, _ in char_tokens(text)]
    if len(chars) + 2 > enc.model.cfg.max_len:
        raise MechanicsInputError(
            "too_long", f"{len(chars)} tokens is more than the model takes", n=len(chars), max=enc.model.cfg.max_len - 2
        )
    ids = [tok.token_id(c) for c in chars]
    if chars and all(i == tok.unk_id for i in ids):
        raise MechanicsInputError("unknown", "no character of the sentence is in the model's vocabulary")
    if enc.model.cfg.causal:
        return ["[CLS]"] + chars, [tok.cls_id] + ids
    return ["[CLS]"] + chars + ["[SEP]"], [tok.cls_id] + ids + [tok.sep_id]


def _ln(x, ln):
    return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)


def embeddings(model, ids: list[int]) -> dict[str, torch.Tensor]:
    """{"token", "segment", "position", "x"}: the embedding layer's parts (T, D) (zeros where the model has none)
    and x = LN(their sum), layer 0 of the residual stream."""
    t = torch.tensor(ids)
    tok = model.tok_emb.weight[t]
    seg = model.seg_emb.weight[0].expand_as(tok) if model.seg_emb is not None else torch.zeros_like(tok)
    pos = model.pos_emb.weight[: len(ids)] if model.pos_emb is not None else torch.zeros_like(tok)
    return {"token": tok, "segment": seg, "position": pos, "x": _ln(tok + seg + pos, model.emb_ln)}


def _block(blk, x, keep, rope: bool, heads: int) -> dict[str, torch.Tensor]:
    """One pre-LN block on x (T, D) from its weights; every intermediate, all heads: (H, T, d) / (H, T, T)."""
    T, D = x.shape
    d = D // heads
    h1 = _ln(x, blk.ln1)
    qkv = F.linear(h1, blk.attn.qkv.weight, blk.attn.qkv.bias)  # (T, 3D): [Q | K | V], head h at columns h*d:(h+1)*d
    q_raw, k_raw, v = qkv.view(T, 3, heads, d).permute(1, 2, 0, 3)  # 3 x (H, T, d)
    q, k = (rotate(q_raw), rotate(k_raw)) if rope else (q_raw, k_raw)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (H, T, T)
    masked = scores.masked_fill(~keep, float("-inf"))
    weights = masked.softmax(-1)
    head_out = weights @ v  # (H, T, d)
    cat = head_out.transpose(0, 1).reshape(T, D)  # (T, D)
    attn_out = F.linear(cat, blk.attn.proj.weight, blk.attn.proj.bias)
    resid = x + attn_out
    h2 = _ln(resid, blk.ln2)
    lin1, lin2 = blk.mlp[0], blk.mlp[2]
    hidden = F.gelu(F.linear(h2, lin1.weight, lin1.bias))  # (T, ffn)
    ffn_out = F.linear(hidden, lin2.weight, lin2.bias)
    return dict(
        ln1=h1,
        q_raw=q_raw,
        k_raw=k_raw,
        q=q,
        k=k,
        v=v,
        scores=scores,
        masked=masked,
        weights=weights,
        head_out=head_out,
        heads=cat,
        attn_out=attn_out,
        resid=resid,
        ln2=h2,
        ffn_hidden=hidden,
        ffn_out=ffn_out,
        out=resid + ffn_out,
    )


def keep_mask(T: int, causal: bool) -> torch.Tensor:
    """(T, T) bool: True where query i may look at key j (all; causal: j <= i). One sentence, so no padding."""
    keep = torch.ones(T, T, dtype=torch.bool)
    return keep.tril() if causal else keep


@torch.no_grad()
def trace_block(enc, text: str, layer: int, head: int) -> BlockTrace:
    """Block `layer` (0-based) of a BERT or GPT encoder on `text`, head `head` (0-based) in detail."""
    model, cfg = enc.model, enc.model.cfg
    if not (0 <= layer < cfg.layers and 0 <= head < cfg.heads):
        raise ValueError(f"layer must be in 0..{cfg.layers - 1} and head in 0..{cfg.heads - 1}, got {layer}, {head}")
    tokens, ids = token_ids(enc, check_text(text, cfg.max_len - 2))
    x = embeddings(model, ids)["x"]
    keep = keep_mask(len(ids), cfg.causal)
    rope = cfg.positions == "rope"
    for i in range(layer + 1):
        x_in = x
        s = _block(model.blocks[i], x_in, keep, rope, cfg.heads)
        x = s["out"]
    D, d = cfg.hidden, cfg.hidden // cfg.heads
    w = model.blocks[layer].attn.qkv.weight  # (3D, D): rows [Q | K | V]
    cols = [w[j * D + head * d : j * D + (head + 1) * d].t() for j in range(3)]  # 3 x (D, d)
    b = model.blocks[layer].attn.qkv.bias.view(3, cfg.heads, d)[:, head]  # (3, d)
    hidden = _ln(x, model.ln_f) if layer == cfg.layers - 1 else x
    per_head = {n: s[n][head] for n in ("q_raw", "k_raw", "q", "k", "v", "scores", "masked", "weights", "head_out")}
    shared = {n: s[n] for n in ("ln1", "heads", "attn_out", "resid", "ln2", "ffn_hidden", "ffn_out", "out")}
    arrays = {n: t.float().numpy().copy() for n, t in {**per_head, **shared}.items()}
    return BlockTrace(
        tokens=tokens,
        layer=layer,
        head=head,
        causal=cfg.causal,
        rotary=rope,
        x=x_in.numpy().copy(),
        w_q=cols[0].numpy().copy(),
        w_k=cols[1].numpy().copy(),
        w_v=cols[2].numpy().copy(),
        b_qkv=b.numpy().copy(),
        keep=keep.numpy(),
        w_o=model.blocks[layer].attn.proj.weight.numpy().copy(),
        hidden=hidden.numpy().copy(),
        **arrays,
    )


# ----------------------------------------------------------------------------- positions
def sinusoidal_table(n_pos: int, dim: int, base: float = 10000.0) -> np.ndarray:
    """(n_pos, dim) Vaswani et al.'s table: PE[p, 2i] = sin(p / base^(2i/dim)), PE[p, 2i+1] = cos(same)."""
    if n_pos < 1 or dim < 2 or dim % 2:
        raise ValueError(f"need n_pos >= 1 and an even dim >= 2, got {n_pos}, {dim}")
    p = np.arange(n_pos, dtype=np.float64)[:, None]
    ang = p / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)[None]  # (n_pos, dim/2)
    out = np.empty((n_pos, dim), dtype=np.float64)
    out[:, 0::2], out[:, 1::2] = np.sin(ang), np.cos(ang)
    return out.astype(np.float32)


def rotary_frequencies(d: int, base: float = ROPE_BASE) -> np.ndarray:
    """(d/2,) the angle per position step of each feature pair (i, i + d/2), as ctxlib.models.bert.rotate uses."""
    return (base ** (-np.arange(0, d // 2, dtype=np.float64) / (d // 2))).astype(np.float32)


@torch.no_grad()
def rotary_by_distance(q: np.ndarray, k: np.ndarray, n: int) -> np.ndarray:
    """(n + 1,) the score q.k / sqrt(d) of the SAME vectors q, k (d,) (unrotated) with the query placed `distance`
    = 0..n positions after the key, through the model's own rotation: what rotary positions alone do to a score.
    At distance 0 it is the unrotated q.k / sqrt(d); it depends only on the distance, not on where the pair sits."""
    q, k = torch.as_tensor(q, dtype=torch.float32), torch.as_tensor(k, dtype=torch.float32)
    d = q.numel()
    qs = rotate(q.expand(n + 1, d).contiguous())  # (n+1, d): q at positions 0..n
    return (qs @ k / math.sqrt(d)).numpy()  # k at position 0 is k itself


def learned_positions(model) -> np.ndarray | None:
    """(max_len, D) the learned absolute position vectors the embedding layer adds, or None (rotary positions)."""
    return None if model.pos_emb is None else model.pos_emb.weight.detach().numpy().copy()


def position_scheme(cfg) -> dict:
    """How the model knows where a token is, read from its config: {"scheme": "rope"|"absolute",
    "embedding_has_position": bool, "max_len": int}."""
    rope = cfg.positions == "rope"
    return {"scheme": cfg.positions, "embedding_has_position": not rope, "max_len": cfg.max_len}


@torch.no_grad()
def repeated_char_check(enc, text: str) -> dict:
    """A character that occurs twice in `text` (or, when none does, in `text` written twice) and how far apart its
    two vectors are at layer 0 (the embedding layer) and layer 1: {"char", "positions": (i, j) token indices,
    "text", "layer0_max_diff", "layer1_max_diff", "layer0_cos"}. With rotary positions layer 0 holds no position,
    so its diff is 0; with learned absolute positions it is not."""
    text = check_text(text, enc.model.cfg.max_len - 2)
    for probe in (text, (text + text)[: enc.model.cfg.max_len - 2]):
        tokens, ids = token_ids(enc, probe)
        seen: dict[int, int] = {}
        pair = None
        for i, t in enumerate(ids):
            if tokens[i] not in ("[CLS]", "[SEP]") and t != enc.tokenizer.unk_id:
                if t in seen:
                    pair = (seen[t], i)
                    break
                seen[t] = i
        if pair:
            break
    if pair is None:
        raise MechanicsInputError("unknown", "no known character repeats in the sentence")
    layers, _ = enc.model(torch.tensor([ids]), all_layers=True)
    a, b = pair
    l0, l1 = layers[0][0].double(), layers[1][0].double()
    cos = float(l0[a] @ l0[b] / (l0[a].norm() * l0[b].norm()))
    return {
        "char": tokens[a],
        "positions": pair,
        "text": probe,
        "layer0_max_diff": float((l0[a] - l0[b]).abs().max()),
        "layer1_max_diff": float((l1[a] - l1[b]).abs().max()),
        "layer0_cos": cos,
        "layer0": layers[0][0, [a, b]].numpy().copy(),
    }
