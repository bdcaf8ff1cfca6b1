"""HfEncoder's left-to-right writing (causal LMs): the next token's distribution, a token's rank in it, and
sampling with GptEncoder's options and return format (ctxlib.models.hf holds the rest of the encoder)."""

from __future__ import annotations

import torch

from ..encoder import rank_in
from ..writing import check_generation, ngram_bans
from .gpt import penalise_repeats

STEP_CANDIDATES = 5  # candidates shown per generated token, as GptEncoder


class HfWriting:
    """Mixed into HfEncoder: the methods of the causal family (GptEncoder's names and return formats)."""

    def _need_causal(self):
        if self.family != "causal":
            raise ValueError(
                f"{self.name} is a {self.family} model; next-token prediction needs a causal (GPT-like) model"
            )

    def prompt_ids(self, prompt: str) -> list[int]:
        """The prompt's token ids (a BOS first when the tokenizer adds one). ValueError (one line) when the prompt is
        empty, has no known token, or is longer than the model takes."""
        self._need_causal()
        ids = self.tokenizer(prompt or "")["input_ids"]
        while (
            ids and ids[-1] in self._specials and ids[-1] in (self.tokenizer.eos_token_id, self.tokenizer.sep_token_id)
        ):
            ids = ids[:-1]  # a tokenizer that closes every text with EOS / [SEP]: the model continues before it
        content = [i for i in ids if i not in self._specials]
        if not content:
            raise ValueError("the prompt is empty; write the beginning of a sentence, e.g. 今天天气")
        if all(i == self.tokenizer.unk_token_id for i in content):
            raise ValueError(f"no character of the prompt {prompt[:20]!r} is in the model's vocabulary")
        if len(ids) > self.max_len:
            raise ValueError(f"the prompt is {len(ids)} tokens long; this model takes at most {self.max_len}")
        return ids

    @torch.no_grad()
    def _next_logits(self, ids: list[int]) -> torch.Tensor:
        """(V,) float logits for the token after `ids` (the last max_len of them)."""
        out = self.model(input_ids=torch.tensor([ids[-self.max_len :]]))
        return out.logits[0, -1].float()

    def next_char(self, text: str, topk: int = 5) -> list[tuple[str, float]]:
        """The top-k next tokens after `text`, with their probabilities (softmax over the non-special vocabulary)."""
        if topk < 1:
            raise ValueError("topk must be at least 1")
        return self._top(self._probs(self._next_logits(self.prompt_ids(text))), topk)

    def char_rank(self, text: str, char: str) -> dict:
        """{"token", "rank", "prob"}: where `char` (one token, as next_char shows it) stands in the next-token
        distribution after `text` (rank 1 = most likely); rank and prob None when it is not one known token."""
        tid = self.token_id(char)
        if tid is None:
            self._need_causal()
            return {"token": char, "rank": None, "prob": None}
        rank, prob = rank_in(self._probs(self._next_logits(self.prompt_ids(text))), tid)
        return {"token": char, "rank": rank, "prob": round(prob, 6)}

    def generate(
        self,
        prompt: str,
        max_new: int = 50,
        temperature: float = 0.8,
        top_k: int = 20,
        seed: int = 0,
        repetition_penalty: float = 1.0,
        no_repeat_ngram: int = 0,
        banned_names=None,
    ) -> dict:
        """Continue `prompt` by sampling `max_new` tokens, each from the model's distribution after the repetition
        penalty (tokens in the prompt or output; 1.0 = off) and the n-gram ban (a token that would repeat an
        `no_repeat_ngram`-gram; 0 = off), divided by `temperature`, cut to the `top_k` most likely (a fixed `seed`
        gives the same text again). Returns GptEncoder.generate's dict: {"prompt", "text", "generated", "steps":
        [{"char" (the token as text), "prob", "sample_prob", "candidates": [(token, prob) x5], "id" (its token id:
        a byte-level piece holding part of a character shows as "\ufffd")}]}. With `banned_names` (e.g.
        lexicon.person_names()), no token is written that would complete one of those names, character by character."""
        check_generation(temperature, top_k, max_new, repetition_penalty, no_repeat_ngram)
        ids = self.prompt_ids(prompt)
        n_prompt = len(ids)
        names = None
        if banned_names:
            from ..lexicon import completions

            table = completions(banned_names)
            names = (table, max(map(len, table), default=0))
        gen = torch.Generator().manual_seed(int(seed))
        steps = []
        for _ in range(max_new):
            logits = self._next_logits(ids)
            logits[self._specials] = float("-inf")
            probs = logits.softmax(-1)
            scores = penalise_repeats(logits, [i for i in ids if i not in self._specials], repetition_penalty)
            banned = sorted(ngram_bans(ids, no_repeat_ngram))
            if banned:
                kept = scores.clone()
                kept[banned] = float("-inf")
                scores = kept if torch.isfinite(kept).any() else scores  # all ruled out: this step ignores the ban
            if names is not None:
                scores = self._ban_names(scores, ids[n_prompt:], prompt, names, top_k)
            top_v, top_j = (scores / temperature).topk(min(top_k, int(torch.isfinite(scores).sum())))
            sample = top_v.softmax(-1)
            pick = int(torch.multinomial(sample, 1, generator=gen))
            j = int(top_j[pick])
            steps.append(
                {
                    "char": self.display(self.tokenizer.convert_ids_to_tokens(j)),
                    "prob": round(float(probs[j]), 6),
                    "sample_prob": round(float(sample[pick]), 6),
                    "candidates": self._top(probs, STEP_CANDIDATES),
                    "id": j,
                }
            )
            ids.append(j)
        generated = self.tokenizer.decode(ids[n_prompt:])
        return {"prompt": prompt, "text": prompt + generated, "generated": generated, "steps": steps}

    def _ban_names(self, scores: torch.Tensor, new_ids: list[int], prompt: str, names, top_k: int) -> torch.Tensor:
        """`scores` with -inf for each of the likeliest candidates whose text would complete a listed name (checked
        character by character after the text so far); the rest unchanged. Only as many candidates as sampling can
        reach are checked (top_k after each ban), so the cost stays a few dictionary lookups a step."""
        from ..lexicon import banned_next

        table, longest = names
        text = (prompt + self.tokenizer.decode(new_ids))[-max(longest, 1) :]
        out = scores.clone()
        checked: set[int] = set()
        while True:
            finite = int(torch.isfinite(out).sum())
            cand = [int(j) for j in out.topk(min(top_k, finite)).indices] if finite else []
            fresh = [j for j in cand if j not in checked]
            if not fresh:
                return out if finite else scores  # every candidate a name: this step ignores the ban
            for j in fresh:
                checked.add(j)
                tail = text
                for ch in self.tokenizer.decode([j]):
                    if ch in banned_next(tail, table, longest):
                        out[j] = float("-inf")
                        break
                    tail = (tail + ch)[-max(longest, 1) :]
