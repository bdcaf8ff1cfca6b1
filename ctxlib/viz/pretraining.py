"""The pre-training page's views: an MLM/NSP example drawn as HTML, masking a text, fill-mask bars.

After Devlin et al. (2019), section 3.1: 15% of the positions are chosen; 80% of those become
[MASK], 10% a random token, 10% stay. Every token is passed through html.escape.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from .attention import SPECIALS
from .common import CJK_FONT, hbar_panels

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


def fill_mask_figure(results: list[dict], originals: list[str | None], title_fmt: str = "[MASK] {n}: {orig}") -> go.Figure:
    """One horizontal bar chart per [MASK] (at most 8): the top-k candidates and their probabilities;
    the original character, when known, in red."""
    res = results[:8]
    panels = [(title_fmt.format(n=k + 1, orig=originals[k] if k < len(originals) and originals[k] else "?"),
               r["candidates"], "#1f77b4") for k, r in enumerate(res)]
    origs = [originals[k] if k < len(originals) else None for k in range(len(res))]
    return hbar_panels(panels, actual=origs, per_row=4, font_size=14)


def example_html(ex: dict, lang: str = "en") -> str:
    """A pre-training example as escaped HTML: segment A / B backgrounds, chosen positions coloured by
    what became of them ([MASK] / random / kept), the original above each changed token."""
    zh = lang == "zh"
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
        cells.append(f'<span style="display:inline-block;text-align:center;margin:1px;min-width:1.2em;">'
                     f'<span style="display:block;font-size:11px;color:#666;">{top}</span>'
                     f'<span style="display:block;padding:1px 3px;border-radius:3px;{style}">{html.escape(tok)}</span></span>')
    legend = (f'<span style="background:{seg_bg[0]};padding:1px 6px;">A</span> '
              f'<span style="background:{seg_bg[1]};padding:1px 6px;">B</span> &nbsp; '
              + " ".join(f'<span style="border:2px solid {c};color:{c};padding:0 4px;">{html.escape(lab)}</span>'
                         for c, lab in ((KIND_COLORS["mask"], "→ [MASK] 80%"), (KIND_COLORS["random"], ("→ 随机字 10%" if zh else "→ random 10%")),
                                        (KIND_COLORS["kept"], ("不变 10%" if zh else "kept 10%")))))
    return (f'<div style="font-family:{CJK_FONT};font-size:16px;line-height:1.2;">'
            f'<div style="font-size:13px;margin-bottom:4px;">{legend}</div>{"".join(cells)}</div>')


def example_counts(ex: dict) -> dict:
    """How many positions could be chosen, how many were, and what became of them."""
    n = sum(1 for t in ex["original_tokens"] if t not in SPECIALS)
    out = {"candidates": n, "chosen": len(ex["masked"]), "mask": 0, "random": 0, "kept": 0}
    for m in ex["masked"]:
        out[m["kind"]] += 1
    return out
