"""A small character-level Chinese GPT: a left-to-right Transformer language model (Radford et al. 2018,
"Improving Language Understanding by Generative Pre-Training"), beside ELMo (two one-directional LSTMs) and
BERT (masked LM, both directions).

The network is BERT's (ctxlib.models.bert) with `BertConfig(causal=True)`: the same pre-LN blocks, character
tokenizer and tied output head, but every position attends only to itself and the positions before it, there
are no segment embeddings and no NSP head, and the head predicts the NEXT character at every position. The
input is `[CLS]` (as the beginning-of-sequence token) followed by the characters; there is no [SEP].

`GptEncoder` is the app's interface: L+1 layers like BERT's (characters pooled into words), causal attention
maps (exactly 0 above the diagonal), `next_char` (top-k next characters) and `generate` (sampling with a
temperature and top-k, a repetition penalty and n-gram ban (ctxlib.writing) and optionally banned names; every step's
choice and top-5 candidates). Training is in ctxlib.training.gpt.
"""

from __future__ import annotations

import torch

from ..encoder import rank_in
from ..tokens import char_tokens
from ..writing import NO_REPEAT_NGRAM, REPETITION_PENALTY, check_generation, ngram_bans
from .bert_encoder import CharTransformerEncoder

STEP_CANDIDATES = 5  # candidates shown per generated character


def penalise_repeats(logits: torch.Tensor, seen, penalty: float) -> torch.Tensor:
    """CTRL's repetition penalty (Keskar et al. 2019): the logit of every token id in `seen` is divided by `penalty`
    when positive and multiplied by it when negative, so a token already written becomes less likely either way.
    Returns a new (V,) tensor; penalty 1.0 returns `logits` unchanged."""
    ids = sorted({int(i) for i in seen})
    if penalty == 1.0 or not ids:
        return logits
    idx = torch.tensor(ids)
    v = logits[idx]
    out = logits.clone()
    out[idx] = torch.where(v > 0, v / penalty, v * penalty)
    return out


class GptEncoder(CharTransformerEncoder):
    kind = "gpt"
    causal = True

    def encode_tokens(self, batch, texts, need_weights: bool = True):
        cap = self.model.cfg.max_len - 1  # [CLS] first, no [SEP]
        full, seqs, flags = [], [], []
        for toks, text in zip(batch, texts):
            flags.append(len(toks) > cap)
            toks = [("[CLS]", 0, 0)] + list(toks[:cap])
            full.append(toks)
            seqs.append([self.tokenizer.cls_id] + [self.tokenizer.token_id(t) for t, _, _ in toks[1:]])
        H, A = self.run_ids(seqs, [[0] * len(s) for s in seqs], need_weights)
        return [self._pack(text, toks, H, A, i, flags[i]) for i, (toks, text) in enumerate(zip(full, texts))]

    # -- next character ----------------------------------------------------------------------------
    def prompt_ids(self, prompt: str) -> list[int]:
        """[CLS] + the prompt's token ids. ValueError (one line, for the CLI and the pages) when the prompt is
        empty, has no known character, or is longer than the model takes."""
        toks = char_tokens(prompt or "")
        if not toks:
            raise ValueError("the prompt is empty; write the beginning of a sentence, e.g. 今天天气")
        ids = [self.tokenizer.token_id(t) for t, _, _ in toks]
        if all(i == self.tokenizer.unk_id for i in ids):
            raise ValueError(f"no character of the prompt {prompt[:20]!r} is in the model's vocabulary")
        cap = self.model.cfg.max_len - 1
        if len(ids) > cap:
            raise ValueError(f"the prompt is {len(ids)} characters long; this model takes at most {cap}")
        return [self.tokenizer.cls_id] + ids

    @torch.no_grad()
    def _next_logits(self, ids: list[int]) -> torch.Tensor:
        """(V,) float logits for the character after `ids` ([CLS] first; cut to the model's last max_len
        positions), specials set to -inf: the model never proposes [PAD], [UNK], [CLS], [SEP] or [MASK]."""
        ids = ids if len(ids) <= self.model.cfg.max_len else [ids[0]] + ids[-(self.model.cfg.max_len - 1) :]
        (h,), _ = self.model(torch.tensor([ids]))
        logits = self.model.mlm_logits(h[0, -1:]).float()[0]  # (V,)
        logits[: self.tokenizer.n_special] = float("-inf")
        return logits

    def _top(self, probs: torch.Tensor, k: int) -> list[tuple[str, float]]:
        v, j = probs.topk(min(k, len(self.tokenizer) - self.tokenizer.n_special))
        return [(self.tokenizer.itos[int(a)], round(float(b), 6)) for a, b in zip(j, v)]

    def next_char(self, text: str, topk: int = 5) -> list[tuple[str, float]]:
        """The top-k next characters after `text`, with their probabilities (softmax over the non-special vocabulary)."""
        if topk < 1:
            raise ValueError("topk must be at least 1")
        return self._top(self._next_logits(self.prompt_ids(text)).softmax(-1), topk)

    def char_rank(self, text: str, char: str) -> dict:
        """{"token", "rank", "prob"}: where `char` stands in the full next-character distribution after `text` (rank 1
        = the most likely); rank and prob None when `char` is not in the vocabulary."""
        tid = self.tokenizer.token_id(char)
        if tid == self.tokenizer.unk_id:
            return {"token": char, "rank": None, "prob": None}
        rank, prob = rank_in(self._next_logits(self.prompt_ids(text)).softmax(-1), tid)
        return {"token": char, "rank": rank, "prob": round(prob, 6)}

    def _name_bans(self, names) -> tuple[dict, int] | None:
        """(lexicon.completions of `names`, its longest key's length), or None for no names."""
        if not names:
            return None
        from ..lexicon import completions

        table = completions(names)
        return table, max(map(len, table), default=0)

    def _banned(self, ids: list[int], text: str, no_repeat_ngram: int, names) -> list[int]:
        """Token ids not to write next: those completing an n-gram already in the text (ids after [CLS]), and those
        completing a listed name at the end of `text`."""
        out = ngram_bans(ids[1:], no_repeat_ngram)
        if names is not None:
            from ..lexicon import banned_next

            for ch in banned_next(text, *names):
                j = self.tokenizer.token_id(ch)
                if j != self.tokenizer.unk_id:
                    out.add(j)
        return sorted(out)

    def generate(
        self,
        prompt: str,
        max_new: int = 50,
        temperature: float = 0.8,
        top_k: int = 20,
        seed: int = 0,
        repetition_penalty: float = REPETITION_PENALTY,
        no_repeat_ngram: int = NO_REPEAT_NGRAM,
        banned_names=None,
    ) -> dict:
        """Continue `prompt` by sampling `max_new` characters, each from the model's distribution divided by
        `temperature` and cut to the `top_k` most likely (a fixed `seed` gives the same text again).

        Before sampling, the logits of characters already in the prompt or output are penalised (`penalise_repeats`,
        `repetition_penalty`; 1.0 = off), a character that would repeat an `no_repeat_ngram`-gram is ruled out (0 =
        off), and so is one that would complete a name of `banned_names` (e.g. lexicon.person_names()). Should every
        character be ruled out, that step ignores the bans.

        Returns {"prompt", "text" (prompt + generated), "generated", "steps": [{"char", "prob" (the model's
        probability of it), "sample_prob" (its probability after the penalty, bans, temperature and top-k),
        "candidates": [(char, prob) x5] (the model's top 5)}]}. When the context outgrows max_len, the model sees
        [CLS] and the last max_len - 1 characters."""
        check_generation(temperature, top_k, max_new, repetition_penalty, no_repeat_ngram)
        ids = self.prompt_ids(prompt)
        names = self._name_bans(banned_names)
        gen = torch.Generator().manual_seed(int(seed))
        steps, text = [], prompt
        k = min(top_k, len(self.tokenizer) - self.tokenizer.n_special)
        for _ in range(max_new):
            logits = self._next_logits(ids)
            probs = logits.softmax(-1)
            scores = penalise_repeats(logits, ids[1:], repetition_penalty)
            banned = self._banned(ids, text, no_repeat_ngram, names)
            if banned:
                kept = scores.clone()
                kept[banned] = float("-inf")
                scores = kept if torch.isfinite(kept).any() else scores
            top_v, top_j = (scores / temperature).topk(k)
            sample = top_v.softmax(-1)
            pick = int(torch.multinomial(sample, 1, generator=gen))
            j = int(top_j[pick])
            ch = self.tokenizer.itos[j]
            steps.append(
                {
                    "char": ch,
                    "prob": round(float(probs[j]), 6),
                    "sample_prob": round(float(sample[pick]), 6),
                    "candidates": self._top(probs, STEP_CANDIDATES),
                }
            )
            text += ch
            ids.append(j)
        return {"prompt": prompt, "text": text, "generated": text[len(prompt) :], "steps": steps}
