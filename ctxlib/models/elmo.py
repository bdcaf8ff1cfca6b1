"""ELMo: a character-CNN bidirectional LSTM language model (Peters et al. 2018, "Deep contextualized
word representations"), after allenai/bilm-tf, sized for a small CPU.

Each word is read through its characters (char embedding -> convolutions of several widths ->
max-pool over time -> highway -> linear projection), so ANY word gets a vector. Two separate
L=2 LSTM stacks with projections (a residual connection around layer 2) read the sentence
left-to-right and right-to-left; the token encoder and the output softmax are shared by both
directions. The output softmax is adaptive (Grave et al. 2017) over the most frequent words;
its log-probabilities are normalised over the whole output vocabulary, so the reported
perplexity is a full-softmax perplexity.

As AllenNLP does, a token is represented by 2L+1 = 3 layers of one width (2 x dim): the
char-CNN vector duplicated, then forward||backward states of each biLSTM layer.
The presets and `train()` are in ctxlib.training.elmo, the sentence batches in ctxlib.training.elmo_batches.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import checkpoint
from ..corpus import nfkc
from ..encoder import MAX_CHARS, Encoded, Encoder, rank_in
from ..tokens import is_punct
from ..vocab import Vocab

# torch runs projected LSTMs with its generic kernel on CPU and says so on every call; nothing to act on
warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")

WORD_SPECIALS = ["<pad>", "<unk>", "<S>", "</S>"]  # output vocabulary; <S>/</S> mark sentence boundaries
CHAR_SPECIALS = ["<pad>", "<unk>", "<bow>", "<eow>", "<S>", "</S>"]  # the boundary tokens get their own "characters"
LAYER_NAMES = ["char-CNN token layer", "biLSTM layer 1", "biLSTM layer 2"]


@dataclass
class ElmoConfig:
    char_dim: int = 16  # character embedding size
    filters: list = field(default_factory=lambda: [[1, 32], [2, 64], [3, 128], [4, 128]])  # [width, n_filters] pairs
    n_highway: int = 1  # highway layers after the max-pooled convolutions
    max_chars: int = 10  # characters per word, <bow> and <eow> included (longer words are cut)
    dim: int = 128  # token vector and LSTM projection size; every output layer is 2 * dim wide
    hidden: int = 512  # LSTM cell size (projected down to dim, as in bilm-tf)
    n_layers: int = 2  # LSTM layers per direction (L)
    dropout: float = 0.1  # on LSTM inputs and on the softmax input
    vocab_size: int = 20000  # output words (the rest -> <unk>)
    cutoffs: list = field(default_factory=lambda: [2000, 8000])  # adaptive softmax cluster boundaries
    softmax: str = "adaptive"  # "adaptive" (trained with) or "full" (for the speed comparison)
    n_chars: int = 0  # character vocabulary size, set from the data

    def __post_init__(self):
        if self.dim <= 0 or self.hidden < self.dim or self.char_dim <= 0:
            raise ValueError("need dim > 0, hidden >= dim and char_dim > 0")
        if self.n_layers < 1 or not self.filters or any(w < 1 or n < 1 for w, n in self.filters):
            raise ValueError("need n_layers >= 1 and filters as [width, count] pairs with positive values")
        if self.max_chars < max(w for w, _ in self.filters):
            raise ValueError("max_chars must be at least the widest filter")
        if not 0 <= self.dropout < 1:
            raise ValueError("dropout must be in [0, 1)")
        if self.softmax not in ("adaptive", "full"):
            raise ValueError("softmax must be 'adaptive' or 'full'")
        if self.vocab_size < 10 or list(self.cutoffs) != sorted(self.cutoffs) or (self.cutoffs and self.cutoffs[0] < 5):
            raise ValueError("vocab_size >= 10 and increasing cutoffs >= 5 required")


# -- modules ----------------------------------------------------------------------------------------------


class Highway(nn.Module):
    """y = g * relu(W_h x) + (1 - g) * x with g = sigmoid(W_g x) (Srivastava et al. 2015)."""

    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)
        with torch.no_grad():
            self.proj.bias[dim:].fill_(-1.0)  # start close to carrying the input through

    def forward(self, x):  # (N, F)
        h, g = self.proj(x).chunk(2, dim=-1)
        g = torch.sigmoid(g)
        return g * F.relu(h) + (1 - g) * x


class CharCNN(nn.Module):
    """Characters of a word -> one dim-sized vector (the context-free token layer)."""

    def __init__(self, cfg: ElmoConfig):
        super().__init__()
        self.emb = nn.Embedding(cfg.n_chars, cfg.char_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(cfg.char_dim, n, w) for w, n in cfg.filters)
        width = sum(n for _, n in cfg.filters)
        self.highways = nn.ModuleList(Highway(width) for _ in range(cfg.n_highway))
        self.proj = nn.Linear(width, cfg.dim)

    def forward(self, chars):  # (U, C) char ids of U distinct words
        x = self.emb(chars).transpose(1, 2)  # (U, E, C)
        h = torch.cat([F.relu(conv(x).max(dim=-1).values) for conv in self.convs], dim=-1)  # (U, F)
        for hw in self.highways:
            h = hw(h)
        return self.proj(h)  # (U, D)


def reverse_padded(x, lengths):
    """Reverse each sequence of (B, T, ...) within its length; padding stays at the end."""
    T = x.size(1)
    ar = torch.arange(T, device=x.device)
    idx = lengths[:, None] - 1 - ar[None, :]  # (B, T)
    idx = torch.where(idx >= 0, idx, ar[None, :].expand_as(idx))
    shape = idx.shape + (1,) * (x.dim() - 2)
    return x.gather(1, idx.view(shape).expand_as(x))


class ElmoLM(nn.Module):
    """The biLM: shared char-CNN, separate forward and backward LSTM stacks, shared output softmax."""

    ddp_find_unused = True  # the adaptive softmax's tail clusters get no gradient in a batch without their words

    def __init__(self, cfg: ElmoConfig):
        super().__init__()
        self.cfg = cfg
        self.chars = CharCNN(cfg)
        mk = lambda: nn.ModuleList(
            nn.LSTM(cfg.dim, cfg.hidden, proj_size=cfg.dim, batch_first=True) for _ in range(cfg.n_layers)
        )
        self.fwd, self.bwd = mk(), mk()
        self.drop = nn.Dropout(cfg.dropout)
        if cfg.softmax == "adaptive":
            self.out = nn.AdaptiveLogSoftmaxWithLoss(cfg.dim, cfg.vocab_size, list(cfg.cutoffs), div_value=4.0)
        else:
            self.out = nn.Linear(cfg.dim, cfg.vocab_size)

    def _stack(self, lstms, x):  # (B, T, D) -> list of L (B, T, D)
        outs, h = [], x
        for i, lstm in enumerate(lstms):
            y, _ = lstm(self.drop(h))  # (B, T, D)
            if i > 0:
                y = y + h  # residual connection around the upper layers (bilm-tf)
            outs.append(y)
            h = y
        return outs

    def states(self, uniq, idx, lengths):
        """Token vectors (B, T, D) and the forward / backward states, each a list of L (B, T, D)."""
        x = self.chars(uniq)[idx]  # (B, T, D): the token layer x
        f = self._stack(self.fwd, x)
        b = [reverse_padded(h, lengths) for h in self._stack(self.bwd, reverse_padded(x, lengths))]
        return x, f, b

    def layers(self, uniq, idx, lengths) -> torch.Tensor:
        """(L+1, B, T, 2D): [token, token] then forward||backward of each layer (AllenNLP layout)."""
        x, f, b = self.states(uniq, idx, lengths)
        return torch.stack([torch.cat([x, x], -1)] + [torch.cat([hf, hb], -1) for hf, hb in zip(f, b)])

    def log_probs(self, h):  # (N, D) -> (N, V), normalised over the whole output vocabulary
        if self.cfg.softmax == "adaptive":
            return self.out.log_prob(h)
        return F.log_softmax(self.out(h).float(), dim=-1)

    def target_nll(self, h, y):  # (N, D), (N,) -> (N,) exact -log p(y)
        with torch.autocast(h.device.type, enabled=False):  # the softmax stays fp32 under bf16 autocast
            if self.cfg.softmax == "adaptive":
                return -self.out(h.float(), y).output
            return F.cross_entropy(self.out(h.float()), y, reduction="none")

    def lm_pairs(self, batch):
        """Forward states at t predict token t+1; backward states at t predict token t-1."""
        _, f, b = self.states(batch["uniq"], batch["idx"], batch["lengths"])
        y = batch["targets"]  # (B, T)
        T = y.size(1)
        valid = torch.arange(T, device=y.device)[None, :] < batch["lengths"][:, None]  # (B, T)
        m = valid[:, 1:]  # pairs (t, t+1) both inside the sentence
        hf, yf = f[-1][:, :-1][m], y[:, 1:][m]  # (N, D), (N,)
        hb, yb = b[-1][:, 1:][m], y[:, :-1][m]
        return hf, yf, hb, yb

    def loss(self, batch):
        hf, yf, hb, yb = self.lm_pairs(batch)
        nll = self.target_nll(self.drop(hf), yf).mean() + self.target_nll(self.drop(hb), yb).mean()
        return nll / 2, yf.numel()


# -- data --------------------------------------------------------------------------------------------------


class Featurizer:
    """Words -> batch tensors: distinct words' character ids, an index into them, output-word targets."""

    def __init__(self, words: Vocab, chars: Vocab, max_chars: int, min_width: int = 1):
        self.word_vocab, self.char_vocab, self.max_chars, self.min_width = words, chars, max_chars, min_width
        self._cache: dict[str, list[int]] = {}

    def char_ids(self, w: str) -> list[int]:
        ids = self._cache.get(w)
        if ids is None:
            c = self.char_vocab
            if w in ("<S>", "</S>"):
                inner = [c[w]]
            else:
                inner = [c.get(ch) for ch in w][: self.max_chars - 2]
            ids = [c["<bow>"]] + inner + [c["<eow>"]]
            if len(self._cache) < 500000:
                self._cache[w] = ids
        return ids

    def batch(self, sents: list[list[str]]) -> dict:
        """Sentences (word lists) -> {"uniq" (U, C), "idx" (B, T), "targets" (B, T), "lengths" (B,)} with <S> ... </S>."""
        seqs = [["<S>"] + [nfkc(w) for w in s] + ["</S>"] for s in sents]
        T = max(len(s) for s in seqs)
        pos = {"<pad>": 0}
        uniq = [[0]]
        idx = np.zeros((len(seqs), T), dtype=np.int64)
        tgt = np.zeros((len(seqs), T), dtype=np.int64)
        for i, s in enumerate(seqs):
            for t, w in enumerate(s):
                j = pos.get(w)
                if j is None:
                    j = pos[w] = len(uniq)
                    uniq.append(self.char_ids(w))
                idx[i, t] = j
                tgt[i, t] = self.word_vocab.get(w)
        # always pad to max_chars: the char-CNN max-pools over padding too, so a batch-dependent width would make
        # a word's vectors depend on the other sentences in the batch
        C = max(self.min_width, self.max_chars)
        u = np.zeros((len(uniq), C), dtype=np.int64)
        for j, ids in enumerate(uniq):
            u[j, : len(ids)] = ids
        return {
            "uniq": torch.from_numpy(u),
            "idx": torch.from_numpy(idx),
            "targets": torch.from_numpy(tgt),
            "lengths": torch.tensor([len(s) for s in seqs]),
        }


# -- the Encoder the app uses ----------------------------------------------------------------------------


class ElmoEncoder(Encoder):
    """3 layers per token: char-CNN (duplicated to 2*dim), then forward||backward of biLSTM layers 1 and 2."""

    kind = "elmo"

    def __init__(self, name, config: dict, summary: dict, path, model: ElmoLM, words: Vocab, chars: Vocab):
        super().__init__(name, config, summary, path)
        self.model = model.eval()
        self.featurizer = Featurizer(words, chars, model.cfg.max_chars, min_width=max(w for w, _ in model.cfg.filters))

    @classmethod
    def from_checkpoint(cls, path) -> "ElmoEncoder":
        path = Path(path)
        cfg_json, vocab_json, sd = checkpoint.load(path)
        try:
            cfg = ElmoConfig(**cfg_json["config"])
        except (TypeError, ValueError) as e:
            raise checkpoint.CheckpointError(
                f"{path / 'config.json'} has a bad ELMo config ({e}). "
                f"Rebuild with: {checkpoint.rebuild_command('elmo')}"
            ) from e
        model = ElmoLM(cfg)
        checkpoint.load_state_into(model, sd, path)
        enc = cls(
            path.name,
            cfg_json["config"],
            cfg_json.get("summary", {}),
            path,
            model,
            Vocab.from_json(vocab_json["words"]),
            Vocab.from_json(vocab_json["chars"]),
        )
        return enc

    def untrained(self, seed: int = 0) -> "ElmoEncoder":
        """The same architecture and vocabularies with random weights (the baseline for 'what training adds')."""
        torch.manual_seed(seed)
        return ElmoEncoder(
            self.name + " (untrained)",
            self.config,
            {},
            None,
            ElmoLM(self.model.cfg),
            self.featurizer.word_vocab,
            self.featurizer.char_vocab,
        )

    @property
    def dim(self) -> int:
        return 2 * self.model.cfg.dim

    @property
    def layer_names(self) -> list[str]:
        return list(LAYER_NAMES[:1] + [f"biLSTM layer {i + 1}" for i in range(self.model.cfg.n_layers)])

    def in_vocab(self, word: str) -> bool:
        return True  # the char-CNN builds a vector for any word

    def known(self, word: str) -> bool:
        """In the LM's output vocabulary (seen often enough in training)."""
        return nfkc(word) in self.featurizer.word_vocab.stoi

    def vocab_words(self, max_words: int = 10000) -> list[str]:
        return [w for w in self.featurizer.word_vocab.itos if w not in WORD_SPECIALS][:max_words]

    @torch.no_grad()
    def _run(self, token_lists: list[list[str]]):
        b = self.featurizer.batch([t if t else [] for t in token_lists])
        x, f, bw = self.model.states(b["uniq"], b["idx"], b["lengths"])
        return b, x, f, bw

    def encode_tokens(self, batch, texts) -> list[Encoded]:
        words = [[w for w, _, _ in toks] for toks in batch]
        out = []
        if not words:
            return out
        b, x, f, bw = self._run(words)
        lay = torch.stack([torch.cat([x, x], -1)] + [torch.cat([hf, hb], -1) for hf, hb in zip(f, bw)]).numpy()
        for i, (toks, text) in enumerate(zip(batch, texts)):
            n = len(toks)
            out.append(
                Encoded(
                    text=text,
                    tokens=[w for w, _, _ in toks],
                    spans=[(a, e) for _, a, e in toks],
                    layers=np.ascontiguousarray(lay[:, i, 1 : n + 1, :], dtype=np.float32),
                    layer_names=self.layer_names,
                    attentions=None,
                    known=[nfkc(w) in self.featurizer.word_vocab.stoi for w, _, _ in toks],
                )
            )
        return out

    @torch.no_grad()
    def lm_topk(self, text: str, index: int, k: int = 10, target: str | None = None) -> dict:
        """At token `index`: the forward LM's top-k words given only the tokens before it, and the backward LM's
        top-k given only the tokens after it, each as [(word, probability)]. `actual` gives both LMs'
        probability of the word that is there (<unk> if it is outside the output vocabulary) and, under "rank", its
        rank in each full distribution among the words (1 = the most likely word; <unk>, <S>, </S> and the like are
        not counted, as the charts do not list them; None for <unk> itself). `punct` gives each LM's total probability of
        punctuation and symbol tokens (tokens.is_punct)."""
        toks = self.tokenize(text[:MAX_CHARS], target)
        if not toks:
            raise ValueError("the text has no tokens")
        if not 0 <= index < len(toks):
            raise ValueError(f"index {index} is outside the {len(toks)} tokens of the text")
        words = [w for w, _, _ in toks]
        b, _, f, bw = self._run([words])
        # position index+1 holds token `index` (position 0 is <S>)
        hf = f[-1][0, index]  # (D,) has read <S> w_0 .. w_{index-1}
        hb = bw[-1][0, index + 2]  # (D,) has read </S> w_n .. w_{index+1}
        skip = [self.featurizer.word_vocab[s] for s in ("<pad>",)]
        vocab = self.featurizer.word_vocab
        specials = [vocab[s] for s in WORD_SPECIALS if s in vocab]  # the charts list words only
        punct = [i for i, w in enumerate(self.featurizer.word_vocab.itos) if is_punct(w)]
        res = {"tokens": words, "spans": [(a, e) for _, a, e in toks], "index": index, "punct": {}}
        actual = self.featurizer.word_vocab.get(nfkc(words[index]))
        res["actual"] = {"word": self.featurizer.word_vocab.itos[actual], "rank": {}}
        for name, h in (("forward", hf), ("backward", hb)):
            lp = self.model.log_probs(h[None])[0]  # (V,)
            lp[skip] = -float("inf")
            top = torch.topk(lp, min(k, lp.numel() - 1))
            res[name] = [
                (self.featurizer.word_vocab.itos[i], float(math.exp(v)))
                for v, i in zip(top.values.tolist(), top.indices.tolist())
            ]
            res["actual"][name] = float(lp[actual].exp())
            words_only = lp.clone()
            words_only[specials] = -float("inf")  # ranked among the words a chart lists
            res["actual"]["rank"][name] = rank_in(words_only, actual)[0] if actual not in specials else None
            res["punct"][name] = float(lp[punct].exp().sum()) if punct else 0.0
        return res
