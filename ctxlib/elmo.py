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
"""
from __future__ import annotations

import copy
import logging
import math
import random
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import checkpoint
from .corpus import nfkc
from .encoder import Encoded, Encoder
from .training.trainer import Trainer, TrainConfig, resolve_device, to_device
from .vocab import Vocab

log = logging.getLogger(__name__)
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


# Presets: model config + training plan. "default" is the shipped model; its lr schedule is planned by time.
PRESETS = {
    "tiny": dict(model=dict(filters=[[1, 8], [2, 8], [3, 16]], max_chars=6, dim=16, hidden=32, vocab_size=500,
                            cutoffs=[50, 200], dropout=0.0),
                 paragraphs=300, batch_tokens=400, max_len=30, steps=30, lr=3e-3, warmup=3, bench_steps=2,
                 valid_sentences=100, time_limit=0.0),
    # the shipped model: 110 minutes for the whole command on one core of the 2-core CPU (OMP_NUM_THREADS=1,
    # trained beside BERT on the other core)
    "default": dict(model=dict(), paragraphs=0, batch_tokens=1600, max_len=50, steps=100000, lr=2e-3, warmup=200,
                    bench_steps=8, valid_sentences=3000, time_limit=6600.0),
    # the long run (models issue): the same model, bf16 autocast (measured 1.24x faster here), a step schedule with
    # no time budget, so it runs in stretches with --resume; ~6 h on one CPU thread
    "long": dict(model=dict(), paragraphs=0, batch_tokens=1600, max_len=50, steps=20000, lr=2e-3, warmup=200,
                 bench_steps=0, valid_sentences=3000, time_limit=0.0, amp="auto"),
}


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
        mk = lambda: nn.ModuleList(nn.LSTM(cfg.dim, cfg.hidden, proj_size=cfg.dim, batch_first=True)
                                   for _ in range(cfg.n_layers))
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
        tok = self.chars(uniq)[idx]  # (B, T, D)
        f = self._stack(self.fwd, tok)
        b = [reverse_padded(h, lengths) for h in self._stack(self.bwd, reverse_padded(tok, lengths))]
        return tok, f, b

    def layers(self, uniq, idx, lengths) -> torch.Tensor:
        """(L+1, B, T, 2D): [token, token] then forward||backward of each layer (AllenNLP layout)."""
        tok, f, b = self.states(uniq, idx, lengths)
        return torch.stack([torch.cat([tok, tok], -1)] + [torch.cat([x, y], -1) for x, y in zip(f, b)])

    def log_probs(self, h):  # (N, D) -> (N, V), normalised over the whole output vocabulary
        if self.cfg.softmax == "adaptive":
            return self.out.log_prob(h)
        return F.log_softmax(self.out(h).float(), dim=-1)

    def target_nll(self, h, y):  # (N, D), (N,) -> (N,) exact -log p(y)
        with torch.autocast(h.device.type, enabled=False):  # the softmax stays fp32 under bf16 autocast
            if self.cfg.softmax == "adaptive":
                return -self.out(h.float(), y).output
            return F.cross_entropy(self.out(h.float()), y, reduction="none")

    def _pairs(self, batch):
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
        hf, yf, hb, yb = self._pairs(batch)
        nll = self.target_nll(self.drop(hf), yf).mean() + self.target_nll(self.drop(hb), yb).mean()
        return nll / 2, yf.numel()


# -- data --------------------------------------------------------------------------------------------------

class Featurizer:
    """Words -> batch tensors: distinct words' character ids, an index into them, output-word targets."""

    def __init__(self, words: Vocab, chars: Vocab, max_chars: int, min_width: int = 1):
        self.words, self.chars, self.max_chars, self.min_width = words, chars, max_chars, min_width
        self._cache: dict[str, list[int]] = {}

    def char_ids(self, w: str) -> list[int]:
        ids = self._cache.get(w)
        if ids is None:
            c = self.chars
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
                tgt[i, t] = self.words.get(w)
        # always pad to max_chars: the char-CNN max-pools over padding too, so a batch-dependent width would make
        # a word's vectors depend on the other sentences in the batch
        C = max(self.min_width, self.max_chars)
        u = np.zeros((len(uniq), C), dtype=np.int64)
        for j, ids in enumerate(uniq):
            u[j, : len(ids)] = ids
        return {"uniq": torch.from_numpy(u), "idx": torch.from_numpy(idx), "targets": torch.from_numpy(tgt),
                "lengths": torch.tensor([len(s) for s in seqs])}


def chunk_sentences(sents: list[list[str]], max_len: int) -> list[list[str]]:
    out = []
    for s in sents:
        for i in range(0, len(s), max_len):
            if s[i:i + max_len]:
                out.append(s[i:i + max_len])
    return out


class BucketBatches:
    """Endless batches of similar-length sentences (about `batch_tokens` words each), reshuffled every epoch.

    Data parallel: every rank shuffles the groups alike and takes every `world`-th one. `state_dict()` /
    `load_state_dict()` give the position after the last batch handed out (for resuming a run)."""

    def __init__(self, sents, feat: Featurizer, batch_tokens: int, seed: int = 0, rank: int = 0, world: int = 1):
        order = sorted(range(len(sents)), key=lambda i: len(sents[i]))
        self.groups, cur, width = [], [], 0
        for i in order:
            width = max(width, len(sents[i]) + 2)
            if cur and width * (len(cur) + 1) > batch_tokens:
                self.groups.append(cur)
                cur, width = [], len(sents[i]) + 2
            cur.append(i)
        if cur:
            self.groups.append(cur)
        self.sents, self.feat, self.rng = sents, feat, random.Random(seed)
        self.rank, self.world = rank, world
        self.epoch = 0
        self._pos: dict | None = None
        self._start: dict | None = None

    def state_dict(self) -> dict | None:
        return None if self._pos is None else dict(self._pos)

    def load_state_dict(self, state: dict) -> None:
        self._start = dict(state)
        self._pos = dict(state)

    def __iter__(self):
        start, self._start = self._start, None
        if start is not None:
            self.epoch = int(start["epoch"])
            self.rng.setstate(_as_tuple(start["rng"]))
        while True:
            rng_state = self.rng.getstate()
            g = list(self.groups)
            self.rng.shuffle(g)
            skip = int(start["done"]) if start is not None else 0
            start = None
            for n, grp in enumerate(g[self.rank::self.world]):
                if n < skip:
                    continue
                self._pos = {"epoch": self.epoch, "rng": rng_state, "done": n + 1}
                yield self.feat.batch([self.sents[i] for i in grp])
            self.epoch += 1


class StreamBatches:
    """BucketBatches over a user's corpus streamed from disk: this rank reads every `world`-th non-empty line,
    `buffer` lines at a time (jieba words, cut to `max_len`), groups the buffer's sentences by length and
    shuffles the groups; the stream starts again for each epoch. The position (epoch, first line of the buffer,
    generator state, batches done) makes a resumed run continue exactly."""

    def __init__(self, files, feat: Featurizer, batch_tokens: int, max_len: int, seed: int = 0, rank: int = 0,
                 world: int = 1, buffer: int = 50000):
        self.files, self.feat, self.batch_tokens, self.max_len = files, feat, batch_tokens, max_len
        self.rank, self.world, self.buffer = rank, world, buffer
        self.rng = random.Random(seed)
        self.epoch = 0
        self._pos: dict | None = None
        self._start: dict | None = None

    state_dict = BucketBatches.state_dict
    load_state_dict = BucketBatches.load_state_dict

    def _buffers(self, first_line: int):
        from .corpus import shard_lines, user_paragraph

        buf, buf_start = [], None
        for j, line in shard_lines(self.files, self.rank, self.world, first_line):
            if buf_start is None:
                buf_start = j
            buf.extend(chunk_sentences([user_paragraph(line, j).words], self.max_len))
            if len(buf) >= self.buffer:
                yield buf_start, buf
                buf, buf_start = [], None
        if buf:
            yield buf_start, buf

    def __iter__(self):
        start, self._start = self._start, None
        if start is not None:
            self.epoch = int(start["epoch"])
        while True:
            produced = start is not None
            for buf_start, sents in self._buffers(int(start["line"]) if start is not None else 0):
                if start is not None:
                    self.rng.setstate(_as_tuple(start["rng"]))
                rng_state = self.rng.getstate()
                groups = BucketBatches(sents, self.feat, self.batch_tokens).groups
                self.rng.shuffle(groups)
                skip = int(start["done"]) if start is not None else 0
                start = None
                for n, grp in enumerate(groups):
                    if n >= skip:
                        self._pos = {"epoch": self.epoch, "line": buf_start, "rng": rng_state, "done": n + 1}
                        produced = True
                        yield self.feat.batch([sents[i] for i in grp])
            if not produced:
                raise ValueError("the corpus gives this process no sentences; use a bigger corpus")
            start = None
            self.epoch += 1


def _as_tuple(x):
    """random.Random states come back from torch.load as lists; setstate wants tuples."""
    return tuple(_as_tuple(v) for v in x) if isinstance(x, (list, tuple)) else x


def build_vocabs(sents, cfg: ElmoConfig, char_min_count: int = 2) -> tuple[Vocab, Vocab]:
    words = Vocab.build(sents, min_count=1, max_size=cfg.vocab_size, specials=WORD_SPECIALS, unk="<unk>")
    chars = Vocab.build(([ch for w in s for ch in w] for s in sents), min_count=char_min_count,
                        specials=CHAR_SPECIALS, unk="<unk>")
    return words, chars


@torch.no_grad()
def perplexity(model: ElmoLM, feat: Featurizer, sents, device, batch_tokens: int = 4000) -> dict:
    """Full-softmax held-out perplexity of each direction (targets include </S>, <S> and <unk>)."""
    model.eval()
    tot = {"forward": 0.0, "backward": 0.0}
    n = unk = 0
    for grp in BucketBatches(sents, feat, batch_tokens).groups:
        b = to_device(feat.batch([sents[i] for i in grp]), device)
        hf, yf, hb, yb = model._pairs(b)
        tot["forward"] += float(model.target_nll(hf, yf).sum())
        tot["backward"] += float(model.target_nll(hb, yb).sum())
        n += yf.numel()
        unk += int((yf == feat.words.unk).sum())
    out = {k: round(math.exp(v / max(n, 1)), 2) for k, v in tot.items()}
    return {**out, "tokens": n, "unk_rate": round(unk / max(n, 1), 4)}


def _speed(model: ElmoLM, batches, steps: int, device, amp: bool) -> float:
    """Training tokens/s over `steps` Adam steps on a throwaway copy of the model."""
    m = copy.deepcopy(model).to(device).train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    ctx = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if amp else (lambda: torch.autocast(device.type, enabled=False))
    n, t = 0, 0.0
    for i, b in zip(range(steps + 1), batches):
        b = to_device(b, device)
        t0 = time.time()
        with ctx():
            loss, k = m.loss(b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i > 0:  # the first step warms up allocators
            n, t = n + k, t + time.time() - t0
    return round(n / max(t, 1e-9), 1)


def train(preset: str = "default", device: str = "auto", out=None, seed: int = 0, time_limit: float = 0.0,
          callback: Callable | None = None, paragraphs=None, resume=None, stretch: float = 0.0,
          save_every: float = 600.0, corpus_path=None, amp: str | None = None, steps: int | None = None,
          timeline: bool = True) -> Path:
    """Train the biLM on the shared train split and save checkpoints/elmo (or `out`).

    time_limit (seconds, 0 = the preset's budget) covers the whole command: speed benchmark, training
    and the held-out perplexity; the lr decay follows it. stretch: stop this process after so many seconds of
    training, resumable with `resume=DIR`. Under torchrun each rank trains on its own shard; rank 0 writes.
    `paragraphs` (a list of corpus.Paragraph) replaces the corpus (tests); `corpus_path` (a UTF-8 or GB18030 file
    or folder) trains on a user's text instead, streamed from disk (the vocabularies come from its first
    200,000 lines).
    """
    from . import corpus
    from .training.timeline import Timeline
    from .training.trainer import init_distributed
    from .training.run import RunFolder, RunSpec

    rank, world = init_distributed(device)
    spec = RunSpec.make("elmo", PRESETS, preset, seed, out, resume, corpus_path, steps)
    p, seed, d, preset = spec.plan, spec.seed, spec.out, spec.preset
    t_start = time.time()
    budget = time_limit or p["time_limit"]
    dev = resolve_device(device)
    torch.manual_seed(seed)
    files = corpus.user_files(spec.corpus_path) if spec.corpus_path is not None else None
    if files is not None:
        import itertools

        lines = itertools.islice(corpus.iter_user_lines(files), 200000)
        pars = [corpus.user_paragraph(ln, i) for i, ln in enumerate(lines)]
        valid_pars = corpus.load("corpora", "valid")
    elif paragraphs is None:
        pars = corpus.load("all", "train")
        if p["paragraphs"]:
            pars = random.Random(seed).sample(pars, min(p["paragraphs"], len(pars)))
        valid_pars = corpus.load("corpora", "valid")
    else:
        pars, valid_pars = list(paragraphs), list(paragraphs)[: max(1, len(paragraphs) // 10)]
    sents = [p_.words[a:b] for p_ in pars for a, b in p_.sentences()]
    sents = chunk_sentences([[nfkc(w) for w in s] for s in sents], p["max_len"])
    valid = chunk_sentences([[nfkc(w) for w in p_.words[a:b]] for p_ in valid_pars for a, b in p_.sentences()], p["max_len"])
    valid = random.Random(seed).sample(valid, min(p["valid_sentences"], len(valid)))
    if spec.resumed is not None:
        cfg_json, vocab_json, sd = spec.resumed
        cfg = ElmoConfig(**cfg_json["config"])
        wv, cv = Vocab.from_json(vocab_json["words"]), Vocab.from_json(vocab_json["chars"])
        model = ElmoLM(cfg)
        checkpoint.load_state_into(model, sd, d)
    else:
        cfg = ElmoConfig(**p["model"])
        wv, cv = build_vocabs(sents, cfg)
        cfg.n_chars = len(cv)
        cfg.vocab_size = min(cfg.vocab_size, len(wv))
        cfg.cutoffs = [c for c in cfg.cutoffs if c < cfg.vocab_size]
        model = ElmoLM(cfg)
    feat = Featurizer(wv, cv, cfg.max_chars, min_width=max(w for w, _ in cfg.filters))
    n_params = sum(q.numel() for q in model.parameters())
    n_words = sum(map(len, sents))
    if rank == 0:
        log.info("ELMo %s: %d sentences, %d words, output vocab %d, %d chars, %.2fM parameters, %d process(es)", preset,
                 len(sents), sum(map(len, sents)), len(wv), len(cv), n_params / 1e6, world)

    # the same model with a plain full softmax, and with bf16 autocast, for a few steps on the same batches
    speed = spec.prev.get("speed_tokens_per_s", {})
    if p["bench_steps"] and spec.resumed is None:
        full = ElmoLM(ElmoConfig(**{**asdict(cfg), "softmax": "full"}))
        bench = lambda: iter(BucketBatches(sents, feat, p["batch_tokens"], seed=seed + 1))
        speed = {"adaptive_fp32": _speed(model, bench(), p["bench_steps"], dev, False),
                 "full_fp32": _speed(full, bench(), p["bench_steps"], dev, False),
                 "adaptive_bf16": _speed(model, bench(), p["bench_steps"], dev, True),
                 "bench_steps": p["bench_steps"], "threads": torch.get_num_threads()}
        log.info("tokens/s %s", speed)
        del full

    reserve = 60.0 + 0.02 * len(valid)  # for the perplexity pass and saving
    train_time = max(1.0, budget - (time.time() - t_start) - reserve) if budget else 0.0
    if p["batch_tokens"] % world:
        raise ValueError(f"batch_tokens {p['batch_tokens']} is not divisible by the {world} processes")
    tc = TrainConfig(steps=p["steps"], lr=p["lr"], warmup=p["warmup"], budget_s=train_time, time_limit=stretch,
                     amp=amp or p.get("amp", "off"), weight_decay=0.0, clip=1.0, log_every=50, progress=True,
                     save_every=save_every if preset != "tiny" else 0.0)
    if files is None:
        batches = BucketBatches(sents, feat, p["batch_tokens"] // world, seed=seed, rank=rank, world=world)
    else:
        batches = StreamBatches(files, feat, p["batch_tokens"] // world, p["max_len"], seed=seed, rank=rank, world=world)
    vsample = valid[:300]

    def valid_loss() -> float:
        r = perplexity(model, feat, vsample, next(model.parameters()).device)
        return math.log(r["forward"] * r["backward"]) / 2  # mean nll per token of the two directions

    tl = None
    if preset != "tiny" and timeline and rank == 0:
        tl = Timeline("elmo", p["steps"], model, lambda: ElmoEncoder("live", asdict(cfg), {}, None, model, wv, cv),
                      valid_loss)
    folder = RunFolder(
        spec, rank, world, timeline=tl,
        save_checkpoint=lambda summary: checkpoint.save(d, "elmo", asdict(cfg), {"words": wv.to_json(), "chars": cv.to_json()},
                                                        model.state_dict(), summary),
        summary_extra=lambda tr: {
            "speed_tokens_per_s": speed, "train_sentences": None if files else len(sents),
            "train_words": None if files else n_words, "parameters": n_params,
            "epochs": None if files else round(tr.tokens / max(1, n_words + len(sents)), 2)})
    trainer = Trainer(model, batches, tc, device=str(dev), callback=callback, state=spec.state, **folder.hooks())
    folder.start()
    summary = trainer.run()
    if summary["finished"] and rank == 0:
        summary["perplexity"] = perplexity(model, feat, valid, dev)
        log.info("held-out perplexity %s", summary["perplexity"])
    summary.update({"preset": preset, "seed": seed, "time_budget_s": budget, "total_wall_s": round(time.time() - t_start, 1)})
    folder.finish(trainer, summary)
    if rank == 0:
        log.info("saved %s", d)
    return d


# -- the Encoder the app uses ----------------------------------------------------------------------------

class ElmoEncoder(Encoder):
    """3 layers per token: char-CNN (duplicated to 2*dim), then forward||backward of biLSTM layers 1 and 2."""

    kind = "elmo"

    def __init__(self, name, config: dict, summary: dict, path, model: ElmoLM, words: Vocab, chars: Vocab):
        super().__init__(name, config, summary, path)
        self.model = model.eval()
        self.words, self.chars = words, chars
        self.feat = Featurizer(words, chars, model.cfg.max_chars, min_width=max(w for w, _ in model.cfg.filters))

    @classmethod
    def from_checkpoint(cls, path) -> "ElmoEncoder":
        path = Path(path)
        cfg_json, vocab_json, sd = checkpoint.load(path)
        try:
            cfg = ElmoConfig(**cfg_json["config"])
        except (TypeError, ValueError) as e:
            raise checkpoint.CheckpointError(f"{path / 'config.json'} has a bad ELMo config ({e}). "
                                             f"Rebuild with: {checkpoint.rebuild_command('elmo')}") from e
        model = ElmoLM(cfg)
        checkpoint.load_state_into(model, sd, path)
        enc = cls(path.name, cfg_json["config"], cfg_json.get("summary", {}), path, model,
                  Vocab.from_json(vocab_json["words"]), Vocab.from_json(vocab_json["chars"]))
        return enc

    def untrained(self, seed: int = 0) -> "ElmoEncoder":
        """The same architecture and vocabularies with random weights (the baseline for 'what training adds')."""
        torch.manual_seed(seed)
        return ElmoEncoder(self.name + " (untrained)", self.config, {}, None, ElmoLM(self.model.cfg), self.words, self.chars)

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
        return nfkc(word) in self.words.stoi

    def vocab_words(self, max_words: int = 10000) -> list[str]:
        return [w for w in self.words.itos if w not in WORD_SPECIALS][:max_words]

    @torch.no_grad()
    def _run(self, token_lists: list[list[str]]):
        b = self.feat.batch([t if t else [] for t in token_lists])
        tok, f, bw = self.model.states(b["uniq"], b["idx"], b["lengths"])
        return b, tok, f, bw

    def _encode_tokens(self, batch, texts) -> list[Encoded]:
        words = [[w for w, _, _ in toks] for toks in batch]
        out = []
        if not words:
            return out
        b, tok, f, bw = self._run(words)
        lay = torch.stack([torch.cat([tok, tok], -1)] + [torch.cat([x, y], -1) for x, y in zip(f, bw)]).numpy()
        for i, (toks, text) in enumerate(zip(batch, texts)):
            n = len(toks)
            out.append(Encoded(text=text, tokens=[w for w, _, _ in toks], spans=[(a, e) for _, a, e in toks],
                               layers=np.ascontiguousarray(lay[:, i, 1:n + 1, :], dtype=np.float32),
                               layer_names=self.layer_names, attentions=None,
                               known=[nfkc(w) in self.words.stoi for w, _, _ in toks]))
        return out

    @torch.no_grad()
    def lm_topk(self, text: str, index: int, k: int = 10, target: str | None = None) -> dict:
        """At token `index`: the forward LM's top-k words given only the tokens before it, and the backward LM's
        top-k given only the tokens after it, each as [(word, probability)]. `actual` gives both LMs'
        probability of the word that is there (<unk> if it is outside the output vocabulary)."""
        toks = self._tokenize(text[:2000], target)
        if not toks:
            raise ValueError("the text has no tokens")
        if not 0 <= index < len(toks):
            raise ValueError(f"index {index} is outside the {len(toks)} tokens of the text")
        words = [w for w, _, _ in toks]
        b, _, f, bw = self._run([words])
        # position index+1 holds token `index` (position 0 is <S>)
        hf = f[-1][0, index]  # (D,) has read <S> w_0 .. w_{index-1}
        hb = bw[-1][0, index + 2]  # (D,) has read </S> w_n .. w_{index+1}
        skip = [self.words[s] for s in ("<pad>",)]
        res = {"tokens": words, "spans": [(a, e) for _, a, e in toks], "index": index}
        actual = self.words.get(nfkc(words[index]))
        res["actual"] = {"word": self.words.itos[actual]}
        for name, h in (("forward", hf), ("backward", hb)):
            lp = self.model.log_probs(h[None])[0]  # (V,)
            lp[skip] = -float("inf")
            top = torch.topk(lp, min(k, lp.numel() - 1))
            res[name] = [(self.words.itos[i], float(math.exp(v))) for v, i in zip(top.values.tolist(), top.indices.tolist())]
            res["actual"][name] = float(lp[actual].exp())
        return res
