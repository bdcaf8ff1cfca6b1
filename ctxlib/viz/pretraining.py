"""The pre-training page's views: an MLM/NSP example drawn as HTML, masking a text, fill-mask bars.

After Devlin et al. (2019), section 3.1: 15% of the positions are chosen; 80% of those become
[MASK], 10% a random token, 10% stay. Every token is passed through html.escape.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

from ..tokens import mask_at_end  # noqa: F401  (the pages call it as vp.mask_at_end)
from .attention_stats import SPECIALS
from .common import CJK_FONT, hbar_panels, with_true_bar

KIND_COLORS = {"mask": "#d62728", "random": "#ff7f0e", "kept": "#2ca02c"}


def mask_text(text: str, chosen: list[int], whole_word: bool = False) -> tuple[str, list[tuple[int, str]]]:
    """`text` with the chosen character tokens (indices into tokens.char_tokens(text)) replaced by [MASK].

    With `whole_word`, every character of the jieba word containing a chosen character is masked too
    (Chinese whole-word masking). Returns (masked text, [(token index, original token)] in order).
    """
    from ..tokens import char_tokens, segment

    toks = char_tokens(text)
    sel = {i for i in chosen if 0 <= i < len(toks)}
    if whole_word and sel:
        words = segment(text)
        for i in list(sel):
            a, b = toks[i][1], toks[i][2]
            for _, wa, wb in words:
                if wa < b and wb > a:
                    sel.update(j for j, (_, s, e) in enumerate(toks) if s < wb and e > wa)
    out, pos, masked = [], 0, []
    for i, (tok, a, b) in enumerate(toks):
        if i in sel:
            out.append(text[pos:a] + "[MASK]")
            pos = b
            masked.append((i, tok))
    out.append(text[pos:])
    return "".join(out), masked


def fill_mask_figure(
    results: list[dict],
    originals: list[str | None],
    title_fmt: str = "[MASK] {n}: {orig}",
    rank_fmt: str = "{token} #{rank}",
    unknown_fmt: str = "{token} ?",
) -> go.Figure:
    """One horizontal bar chart per [MASK] (at most 8): the top-k candidates and their probabilities; the original
    character, when known, in red: among the candidates, or as one more bar below them labelled with its rank in the
    full distribution (fill_mask's "original"; see common.with_true_bar)."""
    res = results[:8]
    panels, reds = [], []
    for k, r in enumerate(res):
        orig = originals[k] if k < len(originals) else None
        true = r.get("original") or ({"token": orig, "rank": 1} if orig else None)  # no rank given: only mark it
        items, red = with_true_bar(r["candidates"], true, rank_fmt, unknown_fmt)
        panels.append((title_fmt.format(n=k + 1, orig=orig or "?"), items, "#1f77b4"))
        reds.append(red)
    return hbar_panels(panels, actual=reds, per_row=4, font_size=15, label_size=15)  # characters: a little larger


EXAMPLE_LEGEND = ("→ [MASK] 80%", "→ random 10%", "kept 10%")  # the legend of example_html, in English


def example_html(ex: dict, legend_labels: tuple[str, str, str] = EXAMPLE_LEGEND) -> str:
    """A pre-training example as escaped HTML: segment A / B backgrounds, chosen positions coloured by
    what became of them ([MASK] / random / kept), the original above each changed token (sized in em, so that it grows
    with the example: presentation mode zooms it).

    `legend_labels`: the legend's text for the [MASK], random and kept colours (translated by the page)."""
    kinds = {m["index"]: m for m in ex["masked"]}
    seg_bg = {0: "#eef5fc", 1: "#fdf3e7"}
    cells = []
    for i, (tok, orig, s) in enumerate(zip(ex["tokens"], ex["original_tokens"], ex["segment_ids"])):
        m = kinds.get(i)
        style = f"background:{seg_bg.get(int(s), '#fff')};"
        top = "&nbsp;"
        if m is not None:
            style += f"border:2px solid {KIND_COLORS[m['kind']]};color:{KIND_COLORS[m['kind']]};font-weight:bold;"
            top = html.escape(orig)
        elif tok in SPECIALS:
            style += "color:#666;"
        cells.append(
            f'<span style="display:inline-block;text-align:center;margin:1px;min-width:1.2em;">'
            f'<span style="display:block;font-size:0.85em;line-height:1.1;color:#333;">{top}</span>'
            f'<span style="display:block;padding:1px 3px;border-radius:3px;{style}">{html.escape(tok)}</span></span>'
        )
    legend = (
        f'<span style="background:{seg_bg[0]};padding:1px 6px;">A</span> '
        f'<span style="background:{seg_bg[1]};padding:1px 6px;">B</span> &nbsp; '
        + " ".join(
            f'<span style="border:2px solid {KIND_COLORS[k]};color:{KIND_COLORS[k]};padding:0 4px;">'
            f"{html.escape(lab)}</span>"
            for k, lab in zip(("mask", "random", "kept"), legend_labels)
        )
    )
    return (
        f'<div style="font-family:{CJK_FONT};font-size:16px;line-height:1.2;">'
        f'<div style="font-size:13px;margin-bottom:4px;">{legend}</div>{"".join(cells)}</div>'
    )


def example_counts(ex: dict) -> dict:
    """How many positions could be chosen, how many were, and what became of them."""
    n = sum(1 for t in ex["original_tokens"] if t not in SPECIALS)
    out = {"candidates": n, "chosen": len(ex["masked"]), "mask": 0, "random": 0, "kept": 0}
    for m in ex["masked"]:
        out[m["kind"]] += 1
    return out


# the example's interface text, which the page passes in a dict (see example_metrics and example_rows)
EXAMPLE_LABELS = (
    "legend_mask",
    "legend_random",
    "legend_kept",
    "chosen",
    "random",
    "kept",
    "position",
    "original",
    "became",
    "kind",
    "kind_random",
    "kind_kept",
)


def chosen_share(counts: dict) -> str:
    """ "chosen / candidates (share)", e.g. "9 / 60 (15%)", from example_counts."""
    return f"{counts['chosen']} / {counts['candidates']} ({counts['chosen'] / max(counts['candidates'], 1):.0%})"


def example_metrics(ex: dict, labels: dict[str, str]) -> list[tuple[str, str | int]]:
    """(label, value) of the example's four numbers: positions chosen, and how many became [MASK], a random
    character or stayed. `labels` holds the "chosen", "random" and "kept" labels."""
    c = example_counts(ex)
    return [
        (labels["chosen"], chosen_share(c)),
        ("→ [MASK]", c["mask"]),
        (labels["random"], c["random"]),
        (labels["kept"], c["kept"]),
    ]


def example_rows(ex: dict, labels: dict[str, str]) -> list[dict]:
    """One table row per chosen position: its index, original, replacement and kind, under the headers
    labels["position"], ["original"], ["became"], ["kind"]; a random / kept kind is named by labels["kind_random"] /
    ["kind_kept"], a [MASK] as "[MASK]"."""
    kinds = {"mask": "[MASK]", "random": labels["kind_random"], "kept": labels["kind_kept"]}
    return [
        {
            labels["position"]: m["index"],
            labels["original"]: m["original"],
            labels["became"]: m["replacement"],
            labels["kind"]: kinds[m["kind"]],
        }
        for m in ex["masked"]
    ]


# -- the page's inputs -------------------------------------------------------------------------------
def clip_text(text: str, cap: int) -> tuple[str, list, bool]:
    """(text, its character tokens, whether it was cut) with at most `cap` tokens. A text that contains
    [MASK] keeps its characters (the model cuts it), only the token list is shortened."""
    from ..tokens import char_tokens

    toks = char_tokens(text)
    if len(toks) <= cap:
        return text, toks, False
    return (text[: toks[cap - 1][2]] if "[MASK]" not in text else text), toks[:cap], True


def parse_indices(raw: str) -> list[int]:
    """Non-negative integers from a comma-separated string such as ?mask=3,5 (anything else is skipped)."""
    return [int(x) for x in raw.split(",") if x.strip().isdigit()]


def masked_input(text: str, chosen: list[int], whole_word: bool = False) -> tuple[str, list[str | None]]:
    """(the text the model fills, the original of each [MASK]): a text already holding [MASK] as it is (originals
    unknown), otherwise the text with the `chosen` characters masked (see mask_text)."""
    if "[MASK]" in text:
        return text, [None] * text.count("[MASK]")
    masked, pairs = mask_text(text, chosen, whole_word)
    return masked, [o for _, o in pairs]


def mask_span(text: str, span: tuple[int, int]) -> tuple[str, list[str]]:
    """`text` with every character overlapping the character span [s, e) masked, and the masked characters."""
    from ..tokens import char_tokens

    s0, s1 = span
    chars = [i for i, (_, a, b) in enumerate(char_tokens(text)) if a < s1 and b > s0]
    masked, pairs = mask_text(text, chars)
    return masked, [o for _, o in pairs]


def parse_seed(raw) -> int:
    """The example's seed from the text box: a non-negative integer, else 0."""
    return int(raw) if str(raw).strip().isdigit() else 0


def next_seed(raw) -> str:
    """The seed after `raw` (as the text box holds it); "0" when `raw` is not a number."""
    return str(int(raw) + 1 if str(raw).isdigit() else 0)


def training_sample(n: int = 3000, seed: int = 0) -> list:
    """A fixed sample of `n` training paragraphs of the real corpora (supplement sentences would need a
    "written for ctxlab" label), in corpus order; loading the corpus takes a few seconds."""
    import numpy as np

    from .. import corpus

    ps = corpus.load("corpora", "train")
    idx = np.random.default_rng(seed).choice(len(ps), size=min(n, len(ps)), replace=False)
    return [ps[int(i)] for i in sorted(idx)]


# -- one position, four ways ---------------------------------------------------------------------------
POSITION_MODELS = ("elmo", "gpt", "bert")  # the models of "one position four ways", in the page's order
MODEL_NAMES = {"elmo": "ELMo", "gpt": "GPT", "bert": "BERT"}
POSITION_TITLES = (
    "forward",
    "backward",
    "gpt",
    "gpt_none",
    "bert",
    "bert_none",
    "rank",
    "unknown",
)  # the panel titles the page passes
POSITION_COLORS = {"forward": "#1f77b4", "backward": "#ff7f0e", "gpt": "#2ca02c", "bert": "#9467bd"}


def word_spans(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """(words, character spans) of `text` by jieba: the positions to choose from when ELMo (whose words they
    otherwise are) is missing."""
    from ..tokens import segment

    toks = segment(text)
    return [w for w, _, _ in toks], [(a, b) for _, a, b in toks]


def tail_tokens(text: str, cap: int) -> str:
    """The end of `text` holding at most `cap` character tokens (what a left-to-right model with a window sees)."""
    from ..tokens import char_tokens

    toks = char_tokens(text)
    return text if len(toks) <= cap else text[toks[-cap][1] :]


def one_position(
    text: str,
    words: list[str],
    spans: list[tuple[int, int]],
    pos: int,
    k: int,
    ask,
    have: dict,
    titles: dict[str, str],
    gpt_cap: int = 10**6,
    words_only: bool = False,
):
    """The four guesses at word `pos` of `text`: ELMo's forward LM (left context only), its backward LM (right only),
    GPT (left only, but deep: next_char of the text before the word, at most `gpt_cap` tokens of it) and BERT (both
    sides: fill_mask with the word's characters masked; the first mask's candidates).

    `ask(model, method, *args, **kw)` calls a loaded model's method; `have[model]` says whether it is loaded (a
    missing model's panels are left out). `titles`: templates for POSITION_TITLES with {context} ("rank" and
    "unknown": the true token's bar when it is not among the top k, with {token} and {rank}). `words_only`: ELMo's
    panels leave punctuation out (its probabilities unchanged; the share it took is returned).
    Returns (hbar_panels' panels, the label drawn red in each panel, {"forward", "backward"}: ELMo's total probability
    of punctuation, empty without ELMo). ELMo predicts words, GPT and BERT characters (for a word of several
    characters, its first); a true token outside a panel's top k gets its own bar with its rank."""
    from ..tokens import is_punct
    from .elmo import context_label, drop_specials

    left, right = text[: spans[pos][0]], text[spans[pos][1] :]
    masked, originals = mask_span(text, spans[pos])
    char = originals[0] if originals else words[pos]
    panels, actual, punct = [], [], {}
    fmt = (titles.get("rank", "{token} #{rank}"), titles.get("unknown", "{token} ?"))

    def add(title, items, colour, true):
        items, red = with_true_bar(items, true, *fmt)
        panels.append((title, items, colour))
        actual.append(red)

    if have.get("elmo"):
        lm = ask("elmo", "lm_topk", text, pos, k=k + 20 if words_only else k + 6)
        truth = lm.get("actual") or {}
        for name, side, context in (("forward", "left", words[:pos]), ("backward", "right", words[pos + 1 :])):
            items = [(w, p) for w, p in lm[name] if not (words_only and is_punct(w))]
            known = truth.get("word") not in (None, "<unk>")
            true = {
                "token": truth["word"] if known else words[pos],
                "rank": truth.get("rank", {}).get(name) if known else None,
                "prob": truth.get(name),
            }
            add(
                titles[name].format(context=context_label(context, side, 8)),
                drop_specials(items, k),
                POSITION_COLORS[name],
                true if truth else {"token": words[pos], "rank": 1},
            )  # rank unknown: mark only
        punct = dict(lm.get("punct") or {})
    if have.get("gpt"):
        seen = tail_tokens(left, gpt_cap)
        try:
            if not seen.strip():
                raise ValueError("nothing to the left")
            items, title = ask("gpt", "next_char", seen, topk=k), titles["gpt"]
            true = ask("gpt", "char_rank", seen, char)
        except ValueError:  # nothing (known) to its left: GPT has nothing to go on
            items, title, true = [], titles["gpt_none"], None
        add(title.format(context=context_label([seen], "left", 8)), items, POSITION_COLORS["gpt"], true)
    if have.get("bert"):
        both = f"{context_label([left], 'left', 4)}＿{context_label([right], 'right', 4)}"
        try:
            res = ask("bert", "fill_mask", masked, topk=k, originals=originals)[0]
            items, title, true = res["candidates"], titles["bert"], res.get("original") or {"token": char, "rank": 1}
        except (ValueError, IndexError):  # too long for BERT
            items, title, true = [], titles["bert_none"], None
        add(title.format(context=both), items, POSITION_COLORS["bert"], true)
    return panels, actual, punct


def one_position_figure(panels: list, actual: list) -> go.Figure:
    """The four guesses side by side (one row), the real word or character in red; each x axis wide enough for
    the percentages written beside the bars."""
    fig = hbar_panels(panels, actual=actual, per_row=max(1, len(panels)), font_size=12)
    for k, (_, items, _) in enumerate(panels):
        top = max([float(p) for _, p in items] + [0.01])
        fig.layout[f"xaxis{'' if k == 0 else k + 1}"].update(range=[0, top * 1.7], nticks=3)
    return fig
