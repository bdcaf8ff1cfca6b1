"""BertEncoder: the app's interface to a BERT checkpoint (ctxlib.models.bert): every layer's vectors and
attentions, fill_mask, next_sentence and encode_pair.

`CharTransformerEncoder` is what BERT and GPT (ctxlib.models.gpt, the same network with `causal=True`) share:
loading, layer names, character tokens pooled into words, the vocabulary words, running the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .. import checkpoint
from ..encoder import Encoded, Encoder, rank_in
from ..tokens import char_tokens
from ..vocab import Vocab
from .bert import SPECIALS, BertConfig, BertModel, CharTokenizer


class CharTransformerEncoder(Encoder):
    """A BertModel checkpoint (BERT, or GPT when `causal`) behind the Encoder interface; subclasses set `kind`,
    `causal` and `encode_tokens` (where the specials go)."""

    HAS_ATTENTIONS = True
    kind = "base"
    causal = False  # the model's BertConfig.causal this encoder expects
    word_level = False

    def __init__(self, name, config, summary, path, model: BertModel, tokenizer: CharTokenizer):
        super().__init__(name, config, summary, path)
        self.model = model.eval()
        self.tokenizer = tokenizer

    @classmethod
    def from_checkpoint(cls, path):
        cfg_json, vocab_json, sd = checkpoint.load(path)
        try:
            tok = CharTokenizer(Vocab.from_json(vocab_json))
            cfg = BertConfig(**cfg_json["config"])
            if cfg.causal != cls.causal:
                raise ValueError(f"causal={cfg.causal}, a {cls.kind} model needs causal={cls.causal}")
            model = BertModel(cfg)
        except (TypeError, ValueError, KeyError) as e:
            raise checkpoint.CheckpointError(
                f"{Path(path) / 'config.json'} is not a valid {cls.kind.upper()} config ({e}). "
                f"Rebuild with: {checkpoint.rebuild_command(cls.kind)}"
            ) from e
        checkpoint.load_state_into(model, sd, path)
        return cls(Path(path).name, cfg_json["config"], cfg_json.get("summary", {}), Path(path), model, tok)

    @property
    def layer_names(self) -> list[str]:
        return ["embeddings"] + [f"layer {i + 1}" for i in range(self.model.cfg.layers)]

    def tokenize(self, text, target=None):
        return char_tokens(text)  # the target is ignored: words are pooled over their characters

    def in_vocab(self, word: str) -> bool:
        return True

    def vocab_words(self, max_words: int = 10000) -> list[str]:
        out = []
        from ..lexicon import train_word_counts

        for w, _ in train_word_counts():
            toks = char_tokens(w)
            if (
                toks
                and all(self.tokenizer.token_id(t) != self.tokenizer.unk_id for t, _, _ in toks)
                and any(c.isalnum() for c in w)
            ):
                out.append(w)
                if len(out) == max_words:
                    break
        return out

    @torch.no_grad()
    def run_ids(self, seqs: list[list[int]], segs: list[list[int]], need_weights: bool = True):
        T = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), T, dtype=torch.long)
        seg = torch.zeros(len(seqs), T, dtype=torch.long)
        for i, (s, g) in enumerate(zip(seqs, segs)):
            ids[i, : len(s)] = torch.tensor(s)
            seg[i, : len(g)] = torch.tensor(g)
        layers, atts = self.model(ids, seg, need_weights=need_weights, all_layers=True)
        H = torch.stack(layers, 1).float().numpy()  # (B, L+1, T, D)
        A = torch.stack(atts, 1).float().numpy() if need_weights else None  # (B, L, H, T, T)
        return H, A

    def _pack(self, text, toks, H, A, i, truncated, segment_ids=None) -> Encoded:
        n = len(toks)
        known = [(a == b and t in SPECIALS) or self.tokenizer.token_id(t) != self.tokenizer.unk_id for t, a, b in toks]
        return Encoded(
            text=text,
            tokens=[t for t, _, _ in toks],
            spans=[(a, b) for _, a, b in toks],
            layers=np.ascontiguousarray(H[i, :, :n]),
            layer_names=self.layer_names,
            attentions=None if A is None else np.ascontiguousarray(A[i, :, :, :n, :n]),
            truncated=truncated,
            known=known,
            segment_ids=segment_ids,
        )


class BertEncoder(CharTransformerEncoder):
    kind = "bert"

    def encode_tokens(self, batch, texts, need_weights: bool = True) -> list[Encoded]:
        cap = self.model.cfg.max_len - 2
        full, seqs, flags = [], [], []
        for toks, text in zip(batch, texts):
            flags.append(len(toks) > cap)
            toks = [("[CLS]", 0, 0)] + list(toks[:cap]) + [("[SEP]", len(text), len(text))]
            full.append(toks)
            seqs.append(
                [self.tokenizer.cls_id]
                + [self.tokenizer.token_id(t) for t, _, _ in toks[1:-1]]
                + [self.tokenizer.sep_id]
            )
        H, A = self.run_ids(seqs, [[0] * len(s) for s in seqs], need_weights)
        return [self._pack(text, toks, H, A, i, flags[i]) for i, (toks, text) in enumerate(zip(full, texts))]

    def _pair(self, a: str, b: str):
        ta, tb = char_tokens(a), char_tokens(b)
        cap = self.model.cfg.max_len - 3
        truncated = len(ta) + len(tb) > cap
        while len(ta) + len(tb) > cap:  # trim the longer side, as BERT's truncate_seq_pair
            if len(ta) >= len(tb):
                ta = ta[:-1]
            else:
                tb = tb[:-1]
        n = len(a)
        toks = (
            [("[CLS]", 0, 0)]
            + list(ta)
            + [("[SEP]", n, n)]
            + [(t, s + n, e + n) for t, s, e in tb]
            + [("[SEP]", n + len(b), n + len(b))]
        )
        seg = [0] * (len(ta) + 2) + [1] * (len(tb) + 1)
        ids = (
            [self.tokenizer.cls_id]
            + [self.tokenizer.token_id(t) for t, _, _ in ta]
            + [self.tokenizer.sep_id]
            + [self.tokenizer.token_id(t) for t, _, _ in tb]
            + [self.tokenizer.sep_id]
        )
        return toks, seg, ids, truncated

    def encode_pair(self, a: str, b: str) -> Encoded:
        """[CLS] a [SEP] b [SEP] in one sequence; text is a + b (spans of b shifted by len(a));
        segment_ids gives 0 for [CLS] a [SEP] and 1 for b [SEP]."""
        toks, seg, ids, truncated = self._pair(a, b)
        H, A = self.run_ids([ids], [seg])
        return self._pack(a + b, toks, H, A, 0, truncated, seg)

    @torch.no_grad()
    def fill_mask(self, text: str, topk: int = 5, originals: list[str | None] | None = None) -> list[dict]:
        """Top-k candidates for each literal [MASK] in `text`, in order, from a softmax over the
        non-special vocabulary: [{"index", "char_offset", "candidates": [(token, prob), ...]}].

        With `originals` (the hidden character of each [MASK], None when unknown), each result also has "original":
        {"token", "rank", "prob"}: its rank in the full distribution (1 = first), or rank and prob None when the
        character is not in the vocabulary."""
        if "[MASK]" not in text:
            raise ValueError("the text has no [MASK]; write e.g. 今天天气很[MASK]")
        toks, off = [], 0
        mask_at = []
        parts = text.split("[MASK]")
        for k, part in enumerate(parts):
            toks.extend((t, a + off, b + off) for t, a, b in char_tokens(part))
            off += len(part)
            if k < len(parts) - 1:
                mask_at.append((len(toks) + 1, off))  # +1 for [CLS]
                toks.append(("[MASK]", off, off + 6))
                off += 6
        cap = self.model.cfg.max_len - 2
        if len(toks) > cap:
            raise ValueError(f"the text is {len(toks)} tokens long; fill-mask takes at most {cap}")
        ids = (
            [self.tokenizer.cls_id]
            + [self.tokenizer.mask_id if t == "[MASK]" else self.tokenizer.token_id(t) for t, _, _ in toks]
            + [self.tokenizer.sep_id]
        )
        x = torch.tensor([ids])
        (h,), _ = self.model(x, torch.zeros_like(x))
        logits = self.model.mlm_logits(h[0, [i for i, _ in mask_at]]).float()  # (M, V)
        logits[:, : self.tokenizer.n_special] = float("-inf")
        probs = logits.softmax(-1)
        out = []
        for (i, o), p in zip(mask_at, probs):
            v, j = p.topk(min(topk, len(self.tokenizer) - self.tokenizer.n_special))
            out.append(
                {
                    "index": i,
                    "char_offset": o,
                    "candidates": [(self.tokenizer.itos[int(a)], round(float(b), 6)) for a, b in zip(j, v)],
                }
            )
        for k, r in enumerate(out if originals is not None else []):
            tok = originals[k] if k < len(originals) else None
            if tok is not None:
                tid = self.tokenizer.token_id(tok)
                rank, prob = rank_in(probs[k], tid) if tid != self.tokenizer.unk_id else (None, None)
                r["original"] = {"token": tok, "rank": rank, "prob": None if prob is None else round(prob, 6)}
        return out

    @torch.no_grad()
    def next_sentence(self, a: str, b: str) -> float:
        """P(IsNext): the NSP head's probability that b follows a."""
        _, seg, ids, _ = self._pair(a, b)
        (h,), _ = self.model(torch.tensor([ids]), torch.tensor([seg]))
        return float(self.model.nsp_logits(h[:, 0]).float().softmax(-1)[0, 1])
