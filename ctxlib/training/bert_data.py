"""BERT pre-training examples, as in Devlin et al. (2019), "BERT: Pre-training of Deep
Bidirectional Transformers for Language Understanding", section 3.1 and appendix A.1.

One example is `[CLS] A [SEP] B [SEP]` with segment ids 0 for `[CLS] A [SEP]` and
1 for `B [SEP]`:

- next-sentence prediction: half of the time B is the text that really follows A
  in the same document (IsNext); otherwise B is a span from ANOTHER document of the
  same source (NotNext), so the model cannot tell the two apart by the source alone;
- masked LM: 15% of the non-special positions are chosen; of those 80% become
  [MASK], 10% a random vocabulary token and 10% stay unchanged. The model must
  predict the original token at every chosen position.

Documents are corpus paragraphs (People's Daily) or reviews; A ends and B starts
at a clause boundary (after 。！？，；：) when the document has one. Masks are drawn
afresh each time an example is made, so every epoch sees new masks (the
"dynamic masking" of RoBERTa; Devlin et al. duplicated the data 10 times instead).
With `whole_word=True` all characters of a word are masked together (gold words
for People's Daily, jieba words for the reviews), as in Chinese BERT-wwm. A number
between 0 and 1 is the share of examples masked that way; the rest mask single
characters. (Pure whole-word masking never shows the model a word with one
character hidden, and such a model fills 数[MASK] with a one-character word:
top-1 0.02 on the frozen cloze set after 6,370 steps of the long run.)

The batch iterators (PretrainBatches, StreamPretrainBatches) are in bert_batches.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tokens import char_tokens

MASK_RATE = 0.15  # share of non-special positions chosen for prediction
MASK_PROBS = (0.8, 0.1, 0.1)  # chosen -> [MASK], random token, unchanged
SHORT_SEQ_PROB = 0.1  # sometimes a shorter target length, so short inputs are seen too (as in BERT's code)
_BREAKS = set("。！？!?，,；;：:")


@dataclass
class Doc:
    """One pre-tokenised document."""

    source: str
    text: str
    ids: np.ndarray  # (n,) token ids
    spans: list[tuple[int, int]]  # character span of each token in `text`
    words: np.ndarray  # (n,) word index of each token (for whole-word masking)
    starts: np.ndarray  # token indices where a clause starts (always includes 0)


class Documents:
    """Paragraphs tokenised once for fast example generation."""

    def __init__(self, paragraphs, tokenizer, min_tokens: int = 2):
        self.tokenizer = tokenizer
        self.docs: list[Doc] = []
        for p in paragraphs:
            text = p.text
            toks = char_tokens(text)
            if len(toks) < 1:
                continue
            ids = np.array([tokenizer.token_id(t) for t, _, _ in toks], dtype=np.int64)
            # word index per token from the paragraph's (gold or jieba) words
            bounds, off = [], 0
            for w in p.words:
                off += len(w)
                bounds.append(off)
            words = np.searchsorted(np.array(bounds), [a for _, a, _ in toks], side="right")
            starts = [0] + [i + 1 for i, (t, _, _) in enumerate(toks[:-1]) if t in _BREAKS]
            self.docs.append(Doc(p.source, text, ids, [(a, b) for _, a, b in toks], words, np.array(starts)))
        self.by_source: dict[str, list[int]] = {}
        for i, d in enumerate(self.docs):
            self.by_source.setdefault(d.source, []).append(i)
        self.a_docs = [i for i, d in enumerate(self.docs) if len(d.ids) >= min_tokens]
        if not self.a_docs or len(self.docs) < 2:
            raise ValueError("need at least two documents, one with >= 2 tokens, to make NSP pairs")

    def __len__(self) -> int:
        return len(self.docs)


_PREPARED_BY_ID: dict = {}


def _documents(paragraphs, tokenizer) -> Documents:
    if isinstance(paragraphs, Documents):
        return paragraphs
    key = (id(paragraphs), len(paragraphs), id(tokenizer))
    hit = _PREPARED_BY_ID.get(key)
    if hit is not None and hit[0] is paragraphs:
        return hit[1]
    docs = Documents(paragraphs, tokenizer)
    _PREPARED_BY_ID.clear()  # keep one: the app shows examples from one corpus at a time
    _PREPARED_BY_ID[key] = (paragraphs, docs)
    return docs


def _rng(r) -> np.random.Generator:
    return r if isinstance(r, np.random.Generator) else np.random.default_rng(r)


def _span_text(doc: Doc, a: int, b: int) -> str:
    if b <= a:
        return ""
    return doc.text[doc.spans[a][0] : doc.spans[b - 1][1]]


def make_example(
    rng_or_seed,
    tokenizer,
    paragraphs,
    whole_word: bool | float = False,
    max_len: int = 128,
    doc_index: int | None = None,
) -> dict:
    """One pre-training example (a dict; see the module docstring).

    Keys: ids, tokens (after masking), original_ids, original_tokens, segment_ids, is_next,
    a_text, b_text, a_doc, b_doc, word_ids, masked: [{"index", "original", "replacement", "kind"}]
    with kind "mask" | "random" | "kept". `paragraphs` is a list of corpus Paragraphs
    (tokenised once and cached) or a prepared `Documents`.
    """
    if max_len < 8:
        raise ValueError("max_len must be at least 8")
    rng = _rng(rng_or_seed)
    docs = _documents(paragraphs, tokenizer)
    tk = tokenizer
    budget = max_len - 3  # [CLS] A [SEP] B [SEP]
    target = budget if rng.random() >= SHORT_SEQ_PROB else int(rng.integers(4, budget + 1))

    ai = docs.a_docs[int(rng.integers(len(docs.a_docs)))] if doc_index is None else doc_index
    doc = docs.docs[ai]
    n = len(doc.ids)
    # split point s: A ends before token s, the true B starts at s
    inner = doc.starts[(doc.starts > 0) & (doc.starts < n)]
    s = int(rng.choice(inner)) if len(inner) and rng.random() < 0.9 else int(rng.integers(1, n))
    a_want = int(rng.integers(max(1, target // 4), max(2, 3 * target // 4) + 1))
    a0 = max(0, s - a_want)
    later = doc.starts[(doc.starts >= a0) & (doc.starts < s)]
    if len(later):
        a0 = int(later[0])  # begin A at a clause start when one is in reach
    a_ids = doc.ids[a0:s]
    # B is as long as the true continuation would be, whichever B is chosen, so length is no NSP cue
    b_len = max(1, min(n - s, target - len(a_ids)))

    pool = docs.by_source[doc.source]
    is_next = bool(rng.random() < 0.5) or len(pool) < 2
    if is_next:
        bdoc, bi, b0 = doc, ai, s
    else:
        bi = ai
        while bi == ai:
            bi = pool[int(rng.integers(len(pool)))]
        bdoc = docs.docs[bi]
        b0 = int(rng.choice(bdoc.starts)) if rng.random() < 0.9 else 0
    b1 = min(len(bdoc.ids), b0 + b_len)
    b_ids = bdoc.ids[b0:b1]

    ids = np.concatenate([[tk.cls_id], a_ids, [tk.sep_id], b_ids, [tk.sep_id]]).astype(np.int64)
    seg = np.concatenate([np.zeros(len(a_ids) + 2, np.int64), np.ones(len(b_ids) + 1, np.int64)])
    # word groups for whole-word masking (A and B words never merge)
    groups = np.full(len(ids), -1, np.int64)
    groups[1 : 1 + len(a_ids)] = doc.words[a0:s]
    groups[2 + len(a_ids) : 2 + len(a_ids) + len(b_ids)] = bdoc.words[b0:b1] + 10_000_000
    original = ids.copy()
    masked = mask_tokens(rng, ids, groups, tk, whole_word)
    return {
        "ids": ids,
        "original_ids": original,
        "segment_ids": seg,
        "is_next": is_next,
        "tokens": [tk.itos[i] for i in ids],
        "original_tokens": [tk.itos[i] for i in original],
        "a_text": _span_text(doc, a0, s),
        "b_text": _span_text(bdoc, b0, b1),
        "a_doc": ai,
        "b_doc": bi,
        "masked": masked,
        "word_ids": groups.tolist(),  # -1 for specials; B's words offset by 10**7
    }


def mask_tokens(
    rng: np.random.Generator, ids: np.ndarray, groups: np.ndarray, tk, whole_word: bool | float = False
) -> list[dict]:
    """Choose 15% of the non-special positions of `ids` and corrupt them in place (80/10/10).

    `whole_word`: True masks whole words, False single characters, a number in (0, 1) whole words in that
    share of calls (one draw per example)."""
    cand = np.nonzero(groups >= 0)[0]
    if len(cand) == 0:
        return []
    n_pred = max(1, int(round(len(cand) * MASK_RATE)))
    share = float(whole_word)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"whole_word must be a bool or a share between 0 and 1, not {whole_word!r}")
    if share >= 1.0 or (share > 0.0 and rng.random() < share):
        units: list[np.ndarray] = []
        for g in np.unique(groups[cand]):
            units.append(cand[groups[cand] == g])
        chosen: list[int] = []
        for u in rng.permutation(len(units)):
            if len(chosen) >= n_pred:
                break
            if len(chosen) + len(units[u]) > n_pred and chosen:
                continue  # a word that would overshoot is skipped, as in BERT's wwm code
            chosen.extend(int(i) for i in units[u])
        chosen.sort()
    else:
        chosen = sorted(int(i) for i in rng.choice(cand, size=n_pred, replace=False))
    out = []
    for i in chosen:
        r = rng.random()
        orig = int(ids[i])
        if r < MASK_PROBS[0]:
            ids[i], kind = tk.mask_id, "mask"
        elif r < MASK_PROBS[0] + MASK_PROBS[1]:
            ids[i], kind = int(rng.integers(tk.n_special, len(tk.itos))), "random"
        else:
            kind = "kept"
        out.append(
            {
                "index": i,
                "original": tk.itos[orig],
                "replacement": tk.itos[int(ids[i])],
                "kind": kind,
                "original_id": orig,
            }
        )
    return out


def collate(examples: list[dict], pad_id: int = 0) -> dict:
    """Pad a list of examples to one batch of tensors for `BertModel.loss`.

    ids, segment_ids: (B, T); mlm_pos: (N,) flat indices into B*T; mlm_labels: (N,); nsp: (B,) 1 = IsNext.
    """
    import torch

    T = max(len(e["ids"]) for e in examples)
    B = len(examples)
    ids = np.full((B, T), pad_id, np.int64)
    seg = np.zeros((B, T), np.int64)
    pos, lab = [], []
    for b, e in enumerate(examples):
        n = len(e["ids"])
        ids[b, :n] = e["ids"]
        seg[b, :n] = e["segment_ids"]
        for m in e["masked"]:
            pos.append(b * T + m["index"])
            lab.append(m["original_id"])
    return {
        "ids": torch.from_numpy(ids),
        "segment_ids": torch.from_numpy(seg),
        "mlm_pos": torch.tensor(pos, dtype=torch.long),
        "mlm_labels": torch.tensor(lab, dtype=torch.long),
        "nsp": torch.tensor([int(e["is_next"]) for e in examples], dtype=torch.long),
    }
