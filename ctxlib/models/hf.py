"""HfEncoder: a Hugging Face Transformers checkpoint behind the Encoder interface (a thin wrapper in the manner of LIT's
model wrappers): the fast tokenizer's offsets become our spans, `hidden_states` our layers (embeddings first),
`attentions` our attention maps; the model's family says what it can do besides vectors.

    enc = ctxlib.models.hf.load("/data/bert-base-chinese")      # or a hub name already in the cache
    enc.family            # "masked" (fill_mask; next_sentence when has_nsp), "causal" (next_char, generate), "encoder"
    enc.encode(["我买了一个苹果手机。"])[0].layers   # (n_layers + 1, T, dim)

Loading and its safety rules (no remote code, safetensors or weights-only .bin, offline by default) are in
ctxlib.models.hf_load. `transformers` is imported there, on first use, never when ctxlib is imported.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from .. import lexicon
from ..encoder import MAX_CHARS, Encoded, Encoder, rank_in
from ..tokens import Token
from . import hf_load
from .hf_load import HfModelError  # noqa: F401  (re-exported: the error callers catch)
from .hf_writing import HfWriting

download = hf_load.download  # download(name, out_dir): fetch a hub model once into a folder, then load hf:out_dir
MASK = "[MASK]"  # what the user writes; mapped to the tokenizer's own mask token (<mask> for RoBERTa)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD_PREFIX = ("Ġ", "▁")  # byte-level BPE / SentencePiece word-start marks


def load(spec: str, download: bool = False) -> HfEncoder:
    """The model at `spec` (what follows "hf:"): a folder saved with save_pretrained, or a hub name loaded from the
    Hugging Face cache (fetched only with `download=True` or CTXLAB_ALLOW_DOWNLOAD=1). Raises HfModelError."""
    folder, source, name = hf_load.resolve(spec, download)
    cfg = hf_load.read_config(folder)
    family = hf_load.family_of(cfg, folder)
    files, safetensors = hf_load.weight_files(folder)
    keys = hf_load.weight_keys(files, safetensors)
    has_nsp = family == "masked" and cfg["model_type"] == "bert" and any(hf_load.NSP_KEY in k for k in keys)
    tok = hf_load.load_tokenizer(folder)
    model = hf_load.load_model(folder, family, has_nsp, safetensors, cfg["model_type"])
    return HfEncoder(name, source, folder, model, tok, family, has_nsp, hf_load.read_license(folder))


_BYTE_CHARS = hf_load.byte_chars()


class HfEncoder(HfWriting, Encoder):
    """A Transformers model and its fast tokenizer. Sub-word tokens are pooled into words by their character spans;
    special tokens ([CLS], [SEP], <s>) get an empty span, so they are never pooled."""

    @classmethod
    def from_spec(cls, spec: str, download: bool = False) -> "HfEncoder":
        """`load(spec)`: how ctxlib.load reaches this class through the kinds registry (for "hf:SPEC")."""
        return load(spec, download)

    kind = "hf"
    word_level = False
    HAS_ATTENTIONS = True

    def __init__(
        self, name: str, source: str, folder: Path, model, tokenizer, family: str, has_nsp: bool, license: str | None
    ):
        c = model.config
        self.model, self.tokenizer, self.family, self.has_nsp = model, tokenizer, family, bool(has_nsp)
        self.source, self.license = source, license
        self.n_params = int(sum(p.numel() for p in model.parameters()))
        self._specials = sorted({int(i) for i in tokenizer.all_special_ids})
        decoder = type(tokenizer.backend_tokenizer.decoder).__name__
        self._wordpiece, self._bytelevel = decoder == "WordPiece", decoder == "ByteLevel"
        config = {
            "model_type": c.model_type,
            "architectures": list(getattr(c, "architectures", None) or []),
            "dim": int(c.hidden_size),
            "layers": int(c.num_hidden_layers),
            "heads": int(getattr(c, "num_attention_heads", 0) or 0),
            "vocab_size": len(tokenizer),
            "max_len": self._max_len(c, tokenizer),
        }
        super().__init__(name, config, {"outside": True, "parameters": self.n_params}, folder)  # not trained here
        self.language = self._language()

    @staticmethod
    def _max_len(c, tok) -> int:
        pos = getattr(c, "max_position_embeddings", None) or getattr(c, "n_positions", None)
        if pos and "roberta" in c.model_type:  # positions start after the padding index
            pos -= (getattr(c, "pad_token_id", 1) or 1) + 1
        caps = [int(x) for x in (pos, getattr(tok, "model_max_length", None)) if x and 0 < x < 10**7]
        return min(caps) if caps else 512

    def _language(self) -> str:
        """ "zh" when most word-like vocabulary entries (letters, no continuation mark) hold CJK characters."""
        cjk = other = 0
        for piece in self.tokenizer.get_vocab():
            w = piece[1:] if piece.startswith(_WORD_PREFIX) else piece
            if w.startswith("##") or not w.isalpha():
                continue
            if _CJK.search(w):
                cjk += 1
            else:
                other += 1
        return "zh" if cjk > other else "en"

    @property
    def layer_names(self) -> list[str]:
        return ["embeddings"] + [f"layer {i + 1}" for i in range(self.config["layers"])]

    def info(self) -> dict:
        return {
            **super().info(),
            "family": self.family,
            "language": self.language,
            "n_params": self.n_params,
            "license": self.license,
            "source": self.source,
            "has_nsp": self.has_nsp,
        }

    # -- tokens ----------------------------------------------------------------------------------------
    def display(self, piece: str) -> str:
        """A vocabulary piece as shown: WordPiece pieces as they are (##ing), byte-level BPE pieces decoded (Ġthe ->
        " the"; a piece holding part of a character's bytes decodes to "\ufffd")."""
        return piece if self._wordpiece else self.tokenizer.convert_tokens_to_string([piece])

    def _tokens(self, text: str, ids, offsets, seq_ids, segment_ends) -> list[Token]:
        """(token, start, end) per id; a special token (no sequence id) gets the empty span at the end of what came
        before it (0 at the start), so it is never pooled into a word."""
        pieces = self.tokenizer.convert_ids_to_tokens(list(ids))
        out, pos = [], 0
        for piece, (a, b), s in zip(pieces, offsets, seq_ids):
            if s is None:
                out.append((piece, pos, pos))
                continue
            a, b = a + segment_ends[s][0], b + segment_ends[s][0]
            shown = self.display(piece)
            if not self._wordpiece and ("\ufffd" in shown or not shown.strip()) and b > a:
                shown = text[a:b]  # part of a multi-byte character: show the character it belongs to
            out.append((shown, a, b))
            pos = segment_ends[s][1]
        return out

    def tokenize(self, text: str, target: str | None = None) -> list[Token]:
        """The model's tokens of `text` (no special tokens) as (token, start, end); `target` is ignored: words are
        pooled over their sub-word tokens."""
        enc = self.tokenizer(text[:MAX_CHARS], add_special_tokens=False, return_offsets_mapping=True)
        return self._tokens(
            text, enc["input_ids"], enc["offset_mapping"], [0] * len(enc["input_ids"]), {0: (0, len(text))}
        )

    def in_vocab(self, word: str) -> bool:
        ids = self.tokenizer(word, add_special_tokens=False)["input_ids"]
        return bool(ids) and self.tokenizer.unk_token_id not in ids

    # -- running the model -------------------------------------------------------------------------------
    @torch.no_grad()
    def run_ids(self, seqs: list[list[int]], segs: list[list[int]] | None = None, need_weights: bool = True):
        """(H (B, L+1, T, dim) float32, A (B, L, heads, T, T) or None) for right-padded id sequences."""
        T = max(1, max(len(s) for s in seqs))  # an empty text (GPT-2 adds no specials) runs as one padding token
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(seqs), T), pad, dtype=torch.long)
        mask = torch.zeros(len(seqs), T, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
        extra = {}
        if segs is not None:
            seg = torch.zeros(len(seqs), T, dtype=torch.long)
            for i, g in enumerate(segs):
                seg[i, : len(g)] = torch.tensor(g)
            extra["token_type_ids"] = seg
        out = self.model(
            input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=need_weights, **extra
        )
        H = torch.stack(out.hidden_states, 1).float().numpy()  # (B, L+1, T, D)
        A = torch.stack(out.attentions, 1).float().numpy() if need_weights else None  # (B, L, H, T, T)
        return H, A, out

    def _pack(self, text, toks, ids, H, A, i, truncated, segment_ids=None) -> Encoded:
        n = len(toks)
        unk = self.tokenizer.unk_token_id
        return Encoded(
            text=text,
            tokens=[t for t, _, _ in toks],
            spans=[(a, b) for _, a, b in toks],
            layers=np.ascontiguousarray(H[i, :, :n]),
            layer_names=self.layer_names,
            attentions=None if A is None else np.ascontiguousarray(A[i, :, :, :n, :n]),
            truncated=truncated,
            known=[unk is None or int(t) != unk for t in ids],
            segment_ids=segment_ids,
        )

    def encode(
        self, texts: list[str], target: str | None = None, batch_size: int = 32, attentions: bool = True
    ) -> list[Encoded]:
        """Encode each text (the first MAX_CHARS characters, then at most max_len tokens; `truncated` says when
        some was cut). `target` is ignored (sub-words are pooled by span). `attentions=False`: `.attentions` None."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of texts")
        out: list[Encoded] = []
        for i in range(0, len(texts), batch_size):
            out.extend(self.encode_tokens(None, list(texts[i : i + batch_size]), need_weights=attentions))
        return out

    def encode_tokens(self, batch, texts: list[str], need_weights: bool = True) -> list[Encoded]:
        """Encode `texts` in one batch. `batch` (tokenize's output per text) is not needed: the fast tokenizer runs
        on the texts again, which gives the same tokens."""
        cut = [t[:MAX_CHARS] for t in texts]
        enc = self.tokenizer(
            cut, truncation=True, max_length=self.max_len, return_overflowing_tokens=True, return_offsets_mapping=True
        )
        rows: dict[int, int] = {}  # text -> its first row; a text with more rows was cut at max_len
        for r, k in enumerate(enc["overflow_to_sample_mapping"]):
            rows.setdefault(int(k), r)
        n_rows = np.bincount(np.asarray(enc["overflow_to_sample_mapping"], dtype=int), minlength=len(cut))
        toks, seqs = [], []
        for k, t in enumerate(cut):
            r = rows[k]
            seqs.append(enc["input_ids"][r])
            toks.append(self._tokens(t, seqs[-1], enc["offset_mapping"][r], enc.sequence_ids(r), {0: (0, len(t))}))
        H, A, _ = self.run_ids(seqs, None, need_weights)
        return [
            self._pack(cut[k], toks[k], seqs[k], H, A, k, bool(n_rows[k] > 1) or len(texts[k]) > MAX_CHARS)
            for k in range(len(texts))
        ]

    # -- sentence pairs (BERT's next-sentence prediction) ------------------------------------------------
    def _pair(self, a: str, b: str):
        enc = self.tokenizer(
            a, b, truncation=True, max_length=self.max_len, return_offsets_mapping=True, return_token_type_ids=True
        )
        ids = enc["input_ids"]
        seq = enc.sequence_ids(0)
        toks = self._tokens(a + b, ids, enc["offset_mapping"], seq, {0: (0, len(a)), 1: (len(a), len(a) + len(b))})
        seg = enc["token_type_ids"]  # 0 for [CLS] a [SEP], 1 for b [SEP]
        n_full = len(self.tokenizer(a, b)["input_ids"])
        return toks, ids, list(seg), n_full > len(ids)

    def encode_pair(self, a: str, b: str) -> Encoded:
        """[CLS] a [SEP] b [SEP] in one sequence; text is a + b (spans of b shifted by len(a));
        segment_ids gives 0 for [CLS] a [SEP] and 1 for b [SEP]."""
        toks, ids, seg, truncated = self._pair(a, b)
        H, A, _ = self.run_ids([ids], [seg])
        return self._pack(a + b, toks, ids, H, A, 0, truncated, seg)

    def next_sentence(self, a: str, b: str) -> float:
        """P(IsNext): the NSP head's probability that b follows a (Transformers' label 0 = IsNext)."""
        if not self.has_nsp:
            raise ValueError(
                f"{self.name} has no next-sentence head (only BERT checkpoints saved with BertForPreTraining have one)"
            )
        _, ids, seg, _ = self._pair(a, b)
        _, _, out = self.run_ids([ids], [seg], need_weights=False)
        return float(out.seq_relationship_logits.float().softmax(-1)[0, 0])

    # -- predictions -----------------------------------------------------------------------------------
    def _probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Softmax over the non-special vocabulary (special tokens get probability 0)."""
        logits = logits.float().clone()
        logits[..., self._specials] = float("-inf")
        return logits.softmax(-1)

    def _top(self, probs: torch.Tensor, k: int) -> list[tuple[str, float]]:
        v, j = probs.topk(min(k, probs.shape[-1] - len(self._specials)))
        return [(self.display(self.tokenizer.convert_ids_to_tokens(int(a))), round(float(b), 6)) for a, b in zip(j, v)]

    def token_id(self, token: str) -> int | None:
        """The id of `token` as shown (a vocabulary piece such as ##ing, or text that is one token such as " sat");
        None when it is not one known token."""
        pieces = [token]
        if self._bytelevel and token:
            pieces.append("".join(_BYTE_CHARS[b] for b in token.encode("utf-8")))  # " sat" -> "Ġsat"
        for piece in pieces:
            tid = self.tokenizer.convert_tokens_to_ids(piece)
            if isinstance(tid, int) and tid != self.tokenizer.unk_token_id:
                return tid
        ids = self.tokenizer(token, add_special_tokens=False)["input_ids"] if token else []
        return ids[0] if len(ids) == 1 and ids[0] != self.tokenizer.unk_token_id else None

    @torch.no_grad()
    def fill_mask(self, text: str, topk: int = 5, originals: list[str | None] | None = None) -> list[dict]:
        """Top-k candidates for each literal [MASK] in `text`, in order, from a softmax over the non-special
        vocabulary: [{"index", "char_offset", "candidates": [(token, prob), ...]}] (BertEncoder.fill_mask's format).
        With `originals`, each result also has "original": {"token", "rank", "prob"} (None when not one token)."""
        if self.family != "masked":
            raise ValueError(
                f"{self.name} is a {self.family} model; fill-mask needs a masked language model (BERT-like)"
            )
        if MASK not in text:
            raise ValueError("the text has no [MASK]; write e.g. 今天天气很[MASK]")
        offsets = [m.start() for m in re.finditer(re.escape(MASK), text)]
        ids = self.tokenizer(text.replace(MASK, self.tokenizer.mask_token))["input_ids"]
        if len(ids) > self.max_len:
            raise ValueError(f"the text is {len(ids)} tokens long; fill-mask takes at most {self.max_len}")
        at = [i for i, t in enumerate(ids) if t == self.tokenizer.mask_token_id]
        if len(at) != len(offsets):
            raise ValueError("write [MASK] apart from other text so the tokenizer keeps each one whole")
        out = self.model(input_ids=torch.tensor([ids]))
        logits = out.logits if getattr(out, "logits", None) is not None else out.prediction_logits
        probs = self._probs(logits[0, at])  # (M, V)
        res = [{"index": i, "char_offset": o, "candidates": self._top(p, topk)} for i, o, p in zip(at, offsets, probs)]
        for k, r in enumerate(res if originals is not None else []):
            tok = originals[k] if k < len(originals) else None
            if tok is not None:
                tid = self.token_id(tok)
                rank, prob = rank_in(probs[k], tid) if tid is not None else (None, None)
                r["original"] = {"token": tok, "rank": rank, "prob": None if prob is None else round(prob, 6)}
        return res

    # -- nearest vocabulary words -------------------------------------------------------------------------
    def vocab_words(self, max_words: int = 10000) -> list[str]:
        """zh: the training corpus's most frequent words whose tokens are all known (as BertEncoder); en: whole-word
        vocabulary entries (letters only, length >= 2, no continuation pieces), in id order."""
        if self.language == "zh":
            out = []
            for w, _ in lexicon.train_word_counts():
                if any(c.isalnum() for c in w) and self.in_vocab(w):
                    out.append(w)
                    if len(out) == max_words:
                        break
            return out
        bpe = any(p.startswith(_WORD_PREFIX) for p in list(self.tokenizer.get_vocab())[:5000])
        out, seen = [], set()
        for piece, _ in sorted(self.tokenizer.get_vocab().items(), key=lambda kv: kv[1]):
            if bpe:
                if not piece.startswith(_WORD_PREFIX):
                    continue
                piece = piece[1:]
            elif piece.startswith("##"):
                continue
            if len(piece) >= 2 and piece.isalpha() and piece not in seen:
                seen.add(piece)
                out.append(piece)
                if len(out) == max_words:
                    break
        return out
