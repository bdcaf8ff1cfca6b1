"""A small character-level Chinese BERT: Devlin et al. (2019), "BERT: Pre-training of Deep
Bidirectional Transformers for Language Understanding" (masked LM + next-sentence prediction).

- `CharTokenizer`: one token per CJK character (as Google's Chinese BERT), ASCII
  letter/digit runs kept whole, NFKC + lower-case; vocabulary from the train split.
- `BertModel`: token + position + segment embeddings, L Transformer blocks, an MLM
  head tied to the token embeddings that scores ONLY the masked positions during
  training (the other 85% of the vocabulary projections are never computed), and an
  NSP head on [CLS].
- Blocks are **pre-LN** (LayerNorm before attention and MLP, one final LayerNorm),
  not post-LN as in the paper: pre-LN keeps gradients well scaled without a long
  warmup (Xiong et al. 2020, "On Layer Normalization in the Transformer
  Architecture"), which matters when the whole pre-training budget is ~45 CPU
  minutes. Layer outputs are the residual stream after each block; the last one has
  the final LayerNorm applied (the vectors the MLM head reads), like HF GPT-2.
- Attention: training uses `F.scaled_dot_product_attention` (the fused path);
  whenever probabilities are asked for, they are computed explicitly (softmax of
  QK^T/sqrt(d) with padding masked), so a visualiser always gets them.
- Training packs the real tokens of a batch into one (N, D) matrix: embeddings,
  LayerNorms, QKV, projections and MLP never touch [PAD]; only attention uses the
  padded (B, T) grid. With the masked-only MLM head this is what makes it faster
  than transformers' BertForMaskedLM (bench/bert_vs_hf.py).
- GPT training (`lm_loss` with gradients, fp32) scores all positions through `linear_cross_entropy`: the tied
  projection and the cross-entropy fused, 512 rows at a time, gradients made in the forward (same maths as
  F.cross_entropy of the logits, ~30% less time in the head on a CPU; bench/gpt_vs_hf.py). Evaluation and
  BERT's MLM loss keep the plain path.
- `causal=True` makes the same network a left-to-right LM (GPT; ctxlib.models.gpt): position t attends to
  positions <= t only (one mask, combined with the padding mask, in the fused and the explicit path), there are
  no segment embeddings and no NSP head, and the tied head predicts the NEXT character at every position.
- `BertEncoder` (ctxlib.models.bert_encoder): the app's interface (L+1 layers,
  attentions, fill_mask, next_sentence, encode_pair). Pre-training (presets,
  `train()`) is in ctxlib.training.bert; fine-tuning on review sentiment in
  ctxlib.evaluation.finetune.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..tokens import char_tokens, norm_token
from ..vocab import Vocab

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
DENSE_SHARE = 0.85  # causal training batches with at least this share of real tokens skip the packing


# ----------------------------------------------------------------------------- config
@dataclass
class BertConfig:
    vocab_size: int = 0  # set from the tokenizer
    hidden: int = 256  # model width D
    layers: int = 4  # Transformer blocks L
    heads: int = 4  # attention heads per block
    ffn: int = 1024  # MLP inner width
    max_len: int = 128  # longest input, [CLS] and [SEP]s included
    dropout: float = 0.1  # on embeddings, attention output and MLP output
    attn_dropout: float = 0.1  # on attention probabilities
    type_vocab: int = 2  # segment ids (A, B)
    positions: str = "absolute"  # "absolute" (learned embeddings, as BERT) or "rope" (rotary, relative; Su et al. 2021)
    causal: bool = False  # True: left-to-right attention and a next-character head (GPT), no segments / NSP

    def __post_init__(self):
        if self.vocab_size < len(SPECIALS) + 1:
            raise ValueError(
                f"vocab_size must be > {len(SPECIALS)} (specials + at least one token), got {self.vocab_size}"
            )
        if self.hidden <= 0 or self.layers <= 0 or self.heads <= 0 or self.ffn <= 0:
            raise ValueError("hidden, layers, heads and ffn must be positive")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.max_len < 8:
            raise ValueError("max_len must be at least 8")
        if not (0 <= self.dropout < 1 and 0 <= self.attn_dropout < 1):
            raise ValueError("dropout rates must be in [0, 1)")
        if self.positions not in ("absolute", "rope"):
            raise ValueError(f"positions must be 'absolute' or 'rope', got {self.positions!r}")
        if self.positions == "rope" and (self.hidden // self.heads) % 2:
            raise ValueError("rotary positions need an even head width (hidden / heads)")

    def to_json(self) -> dict:
        """The fields as config.json stores them; `causal` only when set, so BERT's config.json is as before."""
        d = asdict(self)
        if not d["causal"]:
            del d["causal"]
        return d


# ----------------------------------------------------------------------------- tokenizer
class CharTokenizer:
    """Character tokens (tokens.char_tokens) mapped through a Vocab with BERT's specials first."""

    def __init__(self, vocab: Vocab):
        if vocab.itos[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"the vocabulary must start with {SPECIALS}")
        self.vocab = vocab
        self.itos = vocab.itos
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = range(len(SPECIALS))
        self.n_special = len(SPECIALS)

    @classmethod
    def build(cls, paragraphs, min_count: int = 2, max_size: int = 8000) -> "CharTokenizer":
        seqs = ([norm_token(t) for t, _, _ in char_tokens(p.text)] for p in paragraphs)
        return cls(Vocab.build(seqs, min_count=min_count, max_size=max_size, specials=SPECIALS, unk="[UNK]"))

    def __len__(self) -> int:
        return len(self.itos)

    def token_id(self, tok: str) -> int:
        return self.vocab.get(norm_token(tok))

    def encode(self, text: str) -> list[int]:
        return [self.token_id(t) for t, _, _ in char_tokens(text)]


# ----------------------------------------------------------------------------- fused LM head + loss
class _LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of the logits h @ w^T + b against `labels`, with the gradients computed in the forward,
    `chunk` rows at a time: the (N, V) logits are made once per chunk, turned in place into softmax - one-hot and
    multiplied straight into dh, dw and db, so no (N, V) log-probabilities or (N, V) gradient are ever stored and
    the backward is three scalings. The maths is F.cross_entropy(F.linear(h, w, b), labels)'s (see the tests)."""

    @staticmethod
    def forward(ctx, h, w, b, labels, chunk: int):
        n = h.size(0)
        gh, gw, gb = torch.empty_like(h), torch.zeros_like(w), torch.zeros_like(b)
        total = h.new_zeros(())
        for s in range(0, n, chunk):
            hc, lc = h[s : s + chunk], labels[s : s + chunk]
            z = torch.addmm(b, hc, w.t())  # (c, V) logits
            lse = torch.logsumexp(z, -1)  # (c,)
            total += (lse - z.gather(1, lc[:, None]).squeeze(1)).sum()
            z.sub_(lse[:, None]).exp_()  # softmax
            z[torch.arange(len(lc), device=z.device), lc] -= 1.0  # d(loss sum)/d(logits)
            z.mul_(1.0 / n)  # of the mean
            torch.mm(z, w, out=gh[s : s + chunk])
            gw.addmm_(z.t(), hc)
            gb.add_(z.sum(0))
        ctx.save_for_backward(gh, gw, gb)
        return total / n

    @staticmethod
    def backward(ctx, g):
        gh, gw, gb = ctx.saved_tensors
        return gh * g, gw * g, gb * g, None, None


LM_CHUNK = 512  # rows per chunk of the fused head: (512, V) fp32 logits stay small (bench/gpt_vs_hf.py)


FUSED_LM_HEAD = True  # False: the plain F.linear + F.cross_entropy path everywhere (the tests compare the two)


def _fused_head_pays(h, w, b) -> bool:
    """Training in fp32: a gradient is wanted, no autocast (bf16 keeps autocast's plain path)."""
    return (
        FUSED_LM_HEAD
        and torch.is_grad_enabled()
        and (h.requires_grad or w.requires_grad)
        and h.dtype == w.dtype == b.dtype == torch.float32
        and not torch.is_autocast_enabled(h.device.type)
    )


def linear_cross_entropy(h, w, b, labels, fused: bool | None = None):
    """F.cross_entropy(F.linear(h, w, b).float(), labels) (labels -100 ignored). `fused` (default: FUSED_LM_HEAD and
    a gradient is needed, in fp32 without autocast) takes _LinearCrossEntropy: the same loss and gradients with
    ~30% less time in the head on a CPU (no stored (N, V) log-probabilities or gradient)."""
    if fused is None:
        fused = _fused_head_pays(h, w, b)
    if not fused:
        return F.cross_entropy(F.linear(h, w, b).float(), labels)
    keep = labels != -100
    if not bool(keep.all()):
        h, labels = h[keep], labels[keep]
    if not len(labels):  # nothing to predict: F.cross_entropy's nan, not a division by zero
        return F.cross_entropy(F.linear(h, w, b).float(), labels)
    return _LinearCrossEntropy.apply(h, w, b, labels, LM_CHUNK)


# ----------------------------------------------------------------------------- model
def rotate(x, base: float = 10000.0):
    """Rotary position embedding of q or k (B, H, T, d): pairs of features (i, i + d/2) are rotated by
    angle t * base^(-2i/d), so q_s . k_t depends on s - t only: attention sees relative positions and
    no absolute position enters the residual stream (Su et al. 2021, RoFormer)."""
    T, d = x.size(-2), x.size(-1)
    inv = base ** (-torch.arange(0, d // 2, device=x.device, dtype=torch.float32) / (d // 2))  # (d/2,)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv[None]  # (T, d/2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)  # (B, H, T, d)


def _right_padded(ids) -> bool:
    """True when every row's [PAD]s (id 0) come after all its real tokens."""
    real = ids != 0
    return bool((real[:, 1:] <= real[:, :-1]).all())


class SelfAttention(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.heads = cfg.heads
        self.rope = cfg.positions == "rope"
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.p_attn = cfg.attn_dropout
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, keep, need_weights: bool = False, packed=None):
        """x: (B, T, D), or (N, D) real tokens only when packed = (idx, B, T) gives their flat positions."""
        if packed is None:
            B, T, D = x.shape
            qkv = self.qkv(x)  # (B, T, 3D)
        else:
            (idx, B, T), D = packed, x.size(-1)
            qkv = self.qkv(x)  # (N, 3D)
            qkv = qkv.new_zeros(B * T, 3 * D).index_copy(0, idx, qkv)  # (B*T, 3D): scattered into the padded grid
        q, k, v = qkv.view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, d)
        if self.rope:
            q, k = rotate(q), rotate(k)
        p_drop = self.p_attn if self.training else 0.0
        if need_weights:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (B, H, T, T)
            att = att.masked_fill(~keep, float("-inf")).float().softmax(-1).to(q.dtype)
            probs = att
            if p_drop:
                att = F.dropout(att, p_drop)
            y = att @ v  # (B, H, T, d)
        else:
            probs = None
            if keep is None:  # causal with padding only at the end: no real query sees a [PAD] key anyway
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=p_drop, is_causal=True)  # the fast causal kernel
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=p_drop)  # (B, H, T, d)
        y = y.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
        if packed is not None:
            y = (
                y.reshape(B * T, D).float().index_select(0, packed[0])
            )  # (N, D); fp32: index_add in the backward is slow in bf16
        return self.drop(self.proj(y)), probs


class Block(nn.Module):
    """Pre-LN Transformer block: x + Attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.hidden)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.hidden)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.hidden, cfg.ffn), nn.GELU(), nn.Linear(cfg.ffn, cfg.hidden), nn.Dropout(cfg.dropout)
        )

    def forward(self, x, keep, need_weights=False, packed=None):
        a, probs = self.attn(self.ln1(x), keep, need_weights, packed)
        x = x + a
        return x + self.mlp(self.ln2(x)), probs


class BertModel(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.cfg = cfg
        D = cfg.hidden
        self.tok_emb = nn.Embedding(cfg.vocab_size, D)
        self.pos_emb = nn.Embedding(cfg.max_len, D) if cfg.positions == "absolute" else None
        self.seg_emb = None if cfg.causal else nn.Embedding(cfg.type_vocab, D)
        self.emb_ln = nn.LayerNorm(D)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(D)
        # MLM head (GPT: the next-character head): transform, then the token embeddings transposed (tied) + bias
        self.mlm_dense = nn.Linear(D, D)
        self.mlm_ln = nn.LayerNorm(D)
        self.mlm_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        # NSP head on [CLS]: BERT's tanh pooler, then 2 classes (1 = IsNext); none in a causal LM
        if not cfg.causal:
            self.pooler = nn.Linear(D, D)
            self.nsp_head = nn.Linear(D, 2)
        self.apply(self._init)
        for n, p in self.named_parameters():  # GPT-2 style scaling of residual projections
            if n.endswith("attn.proj.weight") or n.endswith("mlp.2.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * cfg.layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def keep_mask(self, ids):
        """(B, 1, 1, T), or (B, 1, T, T) when causal: True = key t may be attended to from query s; [PAD] never
        is, and in a causal model no key after the query (t > s). The fused and the explicit path use this mask."""
        B, T = ids.shape
        keep = (ids != 0).view(B, 1, 1, T)
        if self.cfg.causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
        return keep

    def forward(self, ids, segment_ids=None, need_weights: bool = False, all_layers: bool = False):
        """ids, segment_ids: (B, T) (segment ids are ignored when causal). Returns (layers, attentions): layers a
        list of L+1 (B, T, D) tensors (or only the last when all_layers is False), attentions a list of L
        (B, H, T, T) or None."""
        B, T = ids.shape
        if T > self.cfg.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_len {self.cfg.max_len}")
        fast_causal = self.cfg.causal and not need_weights and _right_padded(ids)
        keep = None if fast_causal else self.keep_mask(ids)  # None: SDPA's is_causal kernel (see SelfAttention)
        x = self.tok_emb(ids)  # (B, T, D)
        if self.seg_emb is not None:
            x = x + self.seg_emb(torch.zeros_like(ids) if segment_ids is None else segment_ids)
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(T, device=ids.device))[None]
        x = self.drop(self.emb_ln(x))
        layers, atts = [x], []
        for i, blk in enumerate(self.blocks):
            x, p = blk(x, keep, need_weights)
            atts.append(p)
            layers.append(self.ln_f(x) if i == len(self.blocks) - 1 else x)
        if not all_layers:
            layers = layers[-1:]
        return layers, (atts if need_weights else None)

    def mlm_logits(self, h):
        """h: (N, D) final-layer vectors at the positions to predict -> (N, V) logits."""
        h = self.mlm_ln(F.gelu(self.mlm_dense(h)))
        return h @ self.tok_emb.weight.t() + self.mlm_bias  # (N, V)

    def nsp_logits(self, h_cls):
        return self.nsp_head(torch.tanh(self.pooler(h_cls)))  # (B, 2)

    def forward_packed(self, ids, segment_ids=None):
        """Training path: every per-token layer (embeddings, LayerNorms, QKV, projections, MLP) runs on the
        real tokens only, packed as (N, D); only attention sees the padded (B, T) grid. Returns the final
        vectors (N, D) and `rank` (B*T,): the packed row of each grid position (-1 for [PAD])."""
        B, T = ids.shape
        real = (ids != 0).reshape(-1)  # (B*T,)
        idx = real.nonzero().squeeze(1)  # (N,)
        x = self.tok_emb(ids.reshape(-1)[idx])  # (N, D)
        if self.seg_emb is not None:
            x = x + self.seg_emb(segment_ids.reshape(-1)[idx])
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(T, device=ids.device).repeat(B)[idx])
        x = self.drop(self.emb_ln(x))
        keep = None if self.cfg.causal and _right_padded(ids) else self.keep_mask(ids)
        for blk in self.blocks:
            x, _ = blk(x, keep, packed=(idx, B, T))
        return self.ln_f(x), real.long().cumsum(0) - 1

    def loss(self, batch):
        """MLM cross-entropy on the masked positions only + NSP cross-entropy (causal: next-character
        cross-entropy at every real position, `lm_loss`). Returns (loss, non-pad tokens)."""
        if self.cfg.causal:
            return self.lm_loss(batch)
        ids = batch["ids"]
        h, rank = self.forward_packed(ids, batch["segment_ids"])  # (N, D), (B*T,)
        hm = h.index_select(0, rank[batch["mlm_pos"]])  # (M, D): masked positions only
        mlm = F.cross_entropy(self.mlm_logits(hm).float(), batch["mlm_labels"])
        cls = rank[torch.arange(ids.size(0), device=ids.device) * ids.size(1)]  # packed rows of [CLS]
        nsp = F.cross_entropy(self.nsp_logits(h.index_select(0, cls)).float(), batch["nsp"])
        return mlm + nsp, int(h.size(0))

    def lm_loss(self, batch):
        """Causal LM: batch["ids"] (B, T) = [CLS] + characters, batch["labels"] (B, T) the next character at each
        position (-100 at [PAD]). Mean cross-entropy in nats per predicted character; (loss, non-pad tokens)."""
        ids = batch["ids"]
        real = ids.reshape(-1) != 0
        if real.float().mean() >= DENSE_SHARE:  # little padding: the (B, T) grid costs less than packing it
            (h,), _ = self.forward(ids)
            h = h.reshape(-1, h.size(-1))[real]  # (N, D): the real positions, in order
        else:
            h, _ = self.forward_packed(ids)  # (N, D)
        labels = batch["labels"].reshape(-1)[real]  # (N,)
        if _fused_head_pays(h, self.tok_emb.weight, self.mlm_bias):  # training: the fused head + loss
            t = self.mlm_ln(F.gelu(self.mlm_dense(h)))  # mlm_logits' transform; the tied projection is in the loss
            return linear_cross_entropy(t, self.tok_emb.weight, self.mlm_bias, labels, fused=True), int(h.size(0))
        return F.cross_entropy(self.mlm_logits(h).float(), labels), int(h.size(0))  # evaluation: as it always was
