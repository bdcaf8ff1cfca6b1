"""What every plot shares: the CJK font stack, the palette, escaping of user text.

User text is HTML-escaped before it reaches Plotly (which renders a subset of HTML in labels
and hover text), so `<script>` in a sentence is shown as text, never run.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

CJK_FONT = "'Noto Sans CJK SC', 'Noto Sans SC', 'Microsoft YaHei', 'PingFang SC', sans-serif"
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


class SpecFigure(go.Figure):
    """A go.Figure of plain-dict traces and layout that is only built when something asks for more than its dict.

    `to_dict()` returns {"data": the traces, "layout": the layout + Plotly's default template} made once and shared
    (read it, never change it): what st.plotly_chart reads. Building the Plotly object (templates, one object per
    trace) and deep-copying it back to a dict cost ~2.5 ms a figure, ~45 ms of a Type vs token run with new
    sentences, so it waits for the first other use (`.data`, `.layout`, `update_layout`, `==`, pickling ...), which
    builds it unvalidated (the builders' dicts are fixed; tests validate each builder's output). A layout that names
    its own template keeps it. `freeze` turns any built figure into one (the app's cached figures)."""

    def __init__(
        self, data: list[dict], layout: dict, frames: list[dict] | None = None
    ):  # base runs in _build (no super().__init__)
        traces = [{"type": "scatter", **t} for t in data]
        object.__setattr__(self, "_ctxlab_args", (traces, dict(layout), list(frames or [])))
        object.__setattr__(self, "_ctxlab_built", False)
        object.__setattr__(self, "_ctxlab_dict", None)

    def _build(self) -> None:
        traces, layout, frames = object.__getattribute__(self, "_ctxlab_args")
        object.__setattr__(self, "_ctxlab_built", True)
        go.Figure.__init__(self, data=traces, layout=layout, frames=frames or None, _validate=False)

    def __getattr__(self, name):  # only for what normal lookup did not find: the base's state before it is built
        if name.startswith("_ctxlab") or object.__getattribute__(self, "_ctxlab_built"):
            raise AttributeError(name)
        self._build()
        return object.__getattribute__(self, name)

    def to_dict(self) -> dict:
        if object.__getattribute__(self, "_ctxlab_built"):
            return go.Figure.to_dict(self)
        spec = object.__getattribute__(self, "_ctxlab_dict")
        if spec is None:
            traces, layout, frames = object.__getattribute__(self, "_ctxlab_args")
            spec = {
                "data": traces,
                "layout": layout if "template" in layout else {**layout, "template": default_template()},
            }
            if frames:
                spec["frames"] = frames
            object.__setattr__(self, "_ctxlab_dict", spec)
        return spec

    def to_plotly_json(self) -> dict:
        return self.to_dict()

    def __reduce__(self):  # pickles (st.cache_data, copy) as a plain go.Figure of the same dict
        return go.Figure, (self.to_dict(),)


def freeze(fig):
    """`fig` (a go.Figure) as a SpecFigure of its dict: to_dict() then returns one dict made once (shared: read it,
    never change it) instead of a deep copy per call. st.plotly_chart calls to_dict() on every run: ~2 ms a figure,
    ~15% of a Type vs token run. An unbuilt SpecFigure is returned as it is; what has no to_dict() too."""
    if (isinstance(fig, SpecFigure) and not object.__getattribute__(fig, "_ctxlab_built")) or not hasattr(
        fig, "to_dict"
    ):
        return fig
    spec = fig.to_dict()
    return SpecFigure(spec.get("data", []), spec.get("layout", {}), spec.get("frames"))


def base_layout(margin: tuple[int, int, int, int] = (10, 10, 40, 10), *, hover: bool = False, **kw) -> dict:
    """What every figure's layout shares, as a dict: the CJK font stack (also for hover labels, with `hover`) and the
    margins `margin` = (left, right, top, bottom) in px; `kw` (title, height, axes ...) added as given."""
    out = {"margin": dict(zip("lrtb", margin)), "font": {"family": CJK_FONT}}
    if hover:
        out["hoverlabel"] = {"font": {"family": CJK_FONT}}
    return {**out, **kw}


_TEMPLATES: dict = {}


def default_template() -> dict:
    """Plotly's default template (pio.templates.default) as the dict go.Figure.to_dict() puts in every layout;
    made once per template name, shared."""
    import plotly.io as pio

    name = pio.templates.default
    if name not in _TEMPLATES:
        _TEMPLATES[name] = go.Figure().to_dict()["layout"].get("template", {})
    return _TEMPLATES[name]


def escape(text) -> str:
    """User text made safe for Plotly labels and inline HTML (it interprets <br>, <b>, <a> ...)."""
    return html.escape(str(text), quote=False)


def percent(p: float) -> str:
    """A probability as a percentage: one decimal, or two significant digits below 0.1% (so 0.025% is not "0.0%")."""
    return f"{p:.1%}" if p >= 0.001 or p == 0 else f"{p * 100:.2g}%"


def with_true_bar(
    items: list[tuple[str, float]], true: dict | None, rank_fmt: str = "{token} #{rank}", unknown_fmt: str = "{token} ?"
) -> tuple[list[tuple[str, float]], str | None]:
    """(bars, the label to draw red) for a model's candidates and the true token `true` = {"token", "rank", "prob"}
    (None: not known). Among the candidates: they are returned as they are. Outside them: one more bar, drawn last
    (at the bottom), labelled with the token's rank in the model's full distribution (`rank_fmt`) at its probability;
    or, when the model's vocabulary lacks the token (rank None), labelled `unknown_fmt` at probability 0. A token with
    a rank but no probability is only marked when it is among the candidates."""
    items = list(items)
    if not true or not true.get("token"):
        return items, None
    tok = true["token"]
    if tok in [w for w, _ in items]:
        return items, tok
    if true.get("rank") is None:
        label = unknown_fmt.format(token=tok)
        return items + [(label, 0.0)], label
    if true.get("prob") is None:  # its rank is not known: nothing to draw
        return items, None
    label = rank_fmt.format(token=tok, rank=true["rank"])
    return items + [(label, float(true["prob"]))], label


def hbar_panels(
    panels: list[tuple[str, list[tuple[str, float]], str]],
    actual: str | list | None = None,
    per_row: int = 2,
    font_size: int = 13,
    label_size: int | None = None,
) -> go.Figure:
    """Panels of horizontal probability bars, largest on top: [(title, [(label, p)], colour)]. `actual` (one label
    for all panels, or one per panel) is drawn in red. `font_size`: the panel titles'; `label_size`: the bars'
    labels' (None: Plotly's)."""
    n = max(1, len(panels))
    cols = min(n, per_row)
    rows = (n + cols - 1) // cols
    gap_x, gap_y = 0.16, 0.14
    w = (1 - gap_x * (cols - 1)) / cols
    h = (1 - gap_y * (rows - 1)) / rows
    data, layout, notes = [], {}, []
    longest = 1
    for k, (title, items, color) in enumerate(panels):
        r, c = divmod(k, cols)
        x0, y1 = c * (w + gap_x), 1 - r * (h + gap_y)
        sfx = "" if k == 0 else str(k + 1)
        items = list(items)[::-1]
        longest = max(longest, len(items))
        probs = [float(p) for _, p in items]
        act = actual[k] if isinstance(actual, list) else actual
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "x": probs,
                "y": [f"{escape(lab)}\u2002" for lab, _ in items],
                "xaxis": f"x{sfx}",
                "yaxis": f"y{sfx}",
                "showlegend": False,
                "marker": {"color": ["#d62728" if lab == act else color for lab, _ in items]},
                "text": [percent(p) for p in probs],
                "textposition": "outside",
                "hovertemplate": "%{y}: %{x:.3f}<extra></extra>",
            }
        )
        top = max(probs + [0.01])
        layout[f"xaxis{sfx}"] = {
            "domain": [x0, x0 + w],
            "anchor": f"y{sfx}",
            "range": [0, top * 1.35],
            "tickformat": ".1%" if top < 0.2 else ".0%",
        }
        layout[f"yaxis{sfx}"] = {"domain": [y1 - h, y1], "anchor": f"x{sfx}"}
        if label_size:
            layout[f"yaxis{sfx}"]["tickfont"] = {"size": label_size}
        notes.append(
            {
                "text": escape(title),
                "x": x0 + w / 2,
                "y": y1,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": font_size},
            }
        )
    layout.update(base_layout(annotations=notes, height=60 + rows * (40 + 26 * longest)))
    return go.Figure({"data": data, "layout": layout})


def _box_labels(layout: dict) -> list[dict]:
    """The annotations of a drawing (a figure with rectangles) placed in data coordinates: text in boxes that do not
    grow with the text."""
    if not any(isinstance(s, dict) and s.get("type") == "rect" for s in layout.get("shapes") or []):
        return []
    return [
        a
        for a in layout.get("annotations") or []
        if isinstance(a, dict)
        and a.get("text")
        and str(a.get("xref", "paper"))[:1] == "x"
        and "domain" not in str(a.get("xref"))
    ]


def _pin_default_sizes(d: dict, size: float, cap: float, factor: float) -> None:
    """Write `size` into every axis's tick and title font, the legend, colour bars and bars' printed values of the
    figure dict `d` that set none; the figure's title gets a little more (at most `cap`). A legend under the plot moves down `factor`
    times as far."""
    lay = d["layout"]

    def pin(o: dict, key: str, px: float) -> None:
        if isinstance(o.get(key), str):  # the short form "title": "text"
            o[key] = {"text": o[key]}
        font = o.setdefault(key, {}) if key == "tickfont" else o.setdefault(key, {}).setdefault("font", {})
        font.setdefault("size", px)

    lay.setdefault("xaxis", {}), lay.setdefault("yaxis", {})  # the first axes, set or not (no cartesian trace: unused)
    for k, v in lay.items():
        if not isinstance(v, dict):
            continue
        if k[1:].startswith("axis"):  # xaxis, yaxis2, ...
            pin(v, "tickfont", size)
            pin(v, "title", size)
        elif k == "coloraxis":
            pin(v.setdefault("colorbar", {}), "tickfont", size)
    legend = lay.setdefault("legend", {})
    legend.setdefault("font", {}).setdefault("size", size)
    if isinstance(legend.get("y"), (int, float)) and legend["y"] < 0:  # a legend under the plot: lower, hung from
        legend["y"], legend["yanchor"] = legend["y"] * factor, "top"  # its top, clear of the larger tick labels
    if lay.get("title"):
        pin(lay, "title", min(size * 1.15, max(cap, size)))
    for trace in d.get("data") or []:
        if trace.get("type") == "bar" and trace.get("text") is not None:  # the value printed on a bar
            trace.setdefault("textfont", {}).setdefault("size", size)
        if isinstance(trace.get("colorbar"), dict) or trace.get("type") in ("heatmap", "contour"):
            pin(trace.setdefault("colorbar", {}), "tickfont", size)


FONT_KEYS = ("font", "tickfont", "textfont", "insidetextfont", "outsidetextfont", "titlefont")
PLOTLY_FONT_SIZE = 12  # Plotly's default font size, where a figure sets none
BOX_GROW = 1.25  # how much the labels in a drawing's boxes grow: as much as the boxes leave room for


def scale_fonts(fig, factor: float, cap: float = 20) -> dict:
    """A copy of `fig` (a Figure or its dict) as a dict with every font size multiplied by `factor` (layout, axes,
    titles, annotations, legends, hover labels, bar texts) but grown to at most `cap` px (titles of plots in narrow
    columns must still fit), and its height and margins grown to fit: the presentation mode's large plots. Axes,
    legends and colour bars that set no size get the grown layout font's size written out (Streamlit's chart theme
    sets its own small tick and legend sizes where the figure has none). The labels in a drawing's boxes keep their
    size (see `_box_labels`). The input is not changed (cached figures are shared)."""
    import copy

    d = copy.deepcopy(fig.to_dict() if hasattr(fig, "to_dict") else dict(fig))  # a frozen figure's dict is shared
    lay = d.setdefault("layout", {})
    base = lay.setdefault("font", {}).setdefault("size", PLOTLY_FONT_SIZE)
    boxed = {id(a) for a in _box_labels(lay)}
    for a in _box_labels(lay):  # the boxes do not grow: their labels grow a little (BOX_GROW), not `factor` times
        font = a.setdefault("font", {})
        font["size"] = font.get("size", base) * min(factor, BOX_GROW)

    def grown(size):
        return max(size, min(size * factor, cap))

    def walk(o):
        if isinstance(o, dict) and id(o) not in boxed:
            for k, v in o.items():
                if k in FONT_KEYS and isinstance(v, dict) and "size" in v:
                    s = v["size"]
                    if isinstance(s, (int, float)) and not isinstance(s, bool):
                        v["size"] = grown(s)
                    elif isinstance(s, (list, tuple)):
                        v["size"] = [grown(x) if isinstance(x, (int, float)) else x for x in s]
                walk(v)
        elif isinstance(o, (list, tuple)):
            for x in o:
                walk(x)

    walk(d)
    _pin_default_sizes(d, lay["font"]["size"], cap, factor)
    grow = 1 + (factor - 1) * 0.75  # the plot grows a little less than its text
    if isinstance(lay.get("height"), (int, float)):
        lay["height"] = lay["height"] * grow
    for side, v in (lay.get("margin") or {}).items():
        if side in "lrtb" and isinstance(v, (int, float)):
            lay["margin"][side] = v * factor
    return d
