"""The head view (after BertViz, Vig 2019): one layer's attention as lines from each token on the left to the
tokens it attends to on the right, one colour per head, as a self-contained HTML string (inline SVG + JS, no
external resources; every token passed through html.escape).
"""

from __future__ import annotations

import html
from typing import NamedTuple

import numpy as np

from .attention import HEAD_COLORS
from .common import CJK_FONT


class HeadViewLabels(NamedTuple):
    """The head view's interface text (already translated by the page); `legend` is formatted with n = head number."""

    legend: str = "head {n}"
    hint: str = (
        "Hover a token on the left or right to see only its lines. Left = attending token, right = attended token."
    )
    source: str = "from"
    target: str = "to"


# the hover behaviour: hovering a token keeps only its lines (L: the lines it sends, R: the lines it receives)
_HOVER_SCRIPT = """(function() {
  var svg = document.getElementById("hv");
  var lns = svg.querySelectorAll(".ln");
  function show(side, k) {
    for (var n = 0; n < lns.length; n++) {
      var l = lns[n];
      var hit = side === null || (side === "L" ? l.getAttribute("data-i") === k : l.getAttribute("data-j") === k);
      l.style.display = hit ? "" : "none";
    }
  }
  var tks = svg.querySelectorAll(".tk");
  for (var n = 0; n < tks.length; n++) {
    (function(el) {
      var side = el.classList.contains("L") ? "L" : "R";
      el.addEventListener("mouseenter", function() { el.classList.add("on"); show(side, el.getAttribute("data-k")); });
      el.addEventListener("mouseleave", function() { el.classList.remove("on"); show(null, null); });
    })(tks[n]);
  }
})();
"""


def _line_elements(
    a: np.ndarray, heads: list[int], threshold: float, row_px: int, top: int, left_x: int, right_x: int
) -> list[str]:
    """One SVG line per (head, attending token i, attended token j) with weight >= threshold; opacity = weight."""
    T = a.shape[1]
    lines = []
    for h in heads:
        color = HEAD_COLORS[h % len(HEAD_COLORS)]
        for i in range(T):
            for j in range(T):
                w = float(a[h, i, j])
                if w < threshold:
                    continue
                y1 = top + row_px * i + row_px / 2
                y2 = top + row_px * j + row_px / 2
                op = min(1.0, w * (1.0 if len(heads) == 1 else 0.9))
                lines.append(
                    f'<line class="ln" data-i="{i}" data-j="{j}" x1="{left_x + 4}" y1="{y1:.1f}" '
                    f'x2="{right_x - 4}" y2="{y2:.1f}" stroke="{color}" stroke-opacity="{op:.3f}" '
                    f'stroke-width="{1 + 3 * w:.2f}"/>'
                )
    return lines


def _token_elements(
    tokens: list[str], segment_ids: list[int] | None, row_px: int, top: int, left_x: int, right_x: int
) -> list[str]:
    """Each token twice (left: attending, right: attended), escaped, coloured by segment (B in blue)."""
    texts = []
    seg_color = {0: "#000", 1: "#1a5e9a"}
    for i, tok in enumerate(tokens):
        y = top + row_px * i + row_px / 2 + 5
        col = seg_color.get(segment_ids[i], "#000") if segment_ids and i < len(segment_ids) else "#000"
        t = html.escape(str(tok), quote=True)
        texts.append(
            f'<text class="tk L" data-k="{i}" x="{left_x}" y="{y:.1f}" text-anchor="end" fill="{col}">{t}</text>'
        )
        texts.append(
            f'<text class="tk R" data-k="{i}" x="{right_x}" y="{y:.1f}" text-anchor="start" fill="{col}">{t}</text>'
        )
    return texts


def head_view_html(
    att_layer: np.ndarray,
    tokens: list[str],
    heads: list[int],
    threshold: float = 0.02,
    row_px: int = 22,
    width: int = 420,
    segment_ids: list[int] | None = None,
    labels: HeadViewLabels = HeadViewLabels(),
) -> str:
    """BertViz-style head view for one layer, as a self-contained HTML string (no external resources).

    att_layer: (n_heads, T, T). heads: 0-based heads to draw, one colour each. Lines go from each token on
    the left (attending) to the tokens it attends to on the right, opacity = weight. Hovering a token on
    either side keeps only its lines. Every token is passed through html.escape; the JSON for the script is
    escaped so no token can close the <script> element.
    """
    a = np.asarray(att_layer, dtype=np.float32)
    T = len(tokens)
    heads = [h for h in heads if 0 <= h < a.shape[0]]
    left_x, right_x = 110, width - 110
    top = 30
    height = top + row_px * T + 10
    lines = _line_elements(a, heads, threshold, row_px, top, left_x, right_x)
    texts = _token_elements(tokens, segment_ids, row_px, top, left_x, right_x)
    legend = " ".join(
        f'<span style="color:{HEAD_COLORS[h % len(HEAD_COLORS)]}">■ {html.escape(labels.legend.format(n=h + 1))}</span>'
        for h in heads
    )
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; font-family: {CJK_FONT}; font-size: 14px; }}
.tk {{ cursor: pointer; font-size: 15px; }}
.tk.on {{ font-weight: bold; fill: #d62728; }}
.hint {{ color: #555; font-size: 12px; margin: 2px 0 4px 0; }}
</style></head><body>
<div class="hint">{html.escape(labels.hint)}</div><div>{legend}</div>
<svg id="hv" width="{width}" height="{height}">
<text x="{left_x}" y="16" text-anchor="end" fill="#888" font-size="12">{html.escape(labels.source)}</text>
<text x="{right_x}" y="16" text-anchor="start" fill="#888" font-size="12">{html.escape(labels.target)}</text>
<g id="lines">{"".join(lines)}</g>
<g id="toks">{"".join(texts)}</g>
</svg>
<script>
{_HOVER_SCRIPT}</script></body></html>"""


def head_view_height(n_tokens: int, row_px: int = 22) -> int:
    """Iframe height that fits head_view_html without a scrollbar."""
    return 30 + row_px * n_tokens + 10 + 50
