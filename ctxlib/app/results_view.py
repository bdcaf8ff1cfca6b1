"""The Results page's text: ctxlib.results' claims, comparisons and figures in the session's language; and the
pre-training page's measured NSP table (eval_nsp.json: true, swapped and random second sentences).

The figures come from the claims (read from the eval files); this module only formats them into the catalogue's
sentences (strings/<lang>/results.toml). A figure that could not be read shows as "–", never as an error."""
from __future__ import annotations

from ctxlib.evaluation.nsp import ORDERS, read_table
from ctxlib.results import ORDER_SHARE, ClaimResult, Comparison

from .i18n import msg
from .widgets import layer_label

COLOURS = {"reproduced": "green", "partly": "orange", "not_reproduced": "red", "missing": "gray"}  # verdict colours


def fmt(key: str, v) -> str:
    """One figure as shown: shares as percentages, differences signed, counts with separators, layer names
    translated."""
    if v is None:
        return msg("results.no_figure")
    if isinstance(v, str):
        return layer_label(v)
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if key in ("share", "threshold"):
        return f"{v:.0%}"
    if key.endswith("_delta"):
        return f"{v:+.3f}"
    return f"{v:,.1f}" if key == "tokens_m" else f"{v:.3f}"


class _Fill(dict):
    def __missing__(self, key):
        return msg("results.no_figure")


def text(claim: ClaimResult, part: str) -> str:
    """The claim's catalogue sentence `part` (claim, figure, why) with its figures filled in."""
    template = msg(f"results.claim.{claim.key}.{part}")  # no values given: the placeholders stay for format_map
    return template.format_map(_Fill({k: fmt(k, v) for k, v in claim.figures.items()}))


def why(claim: ClaimResult) -> str:
    """The verdict's own why line when the catalogue has one (why_reproduced, ...), else the claim's general one."""
    own = f"why_{claim.verdict}"
    key = f"results.claim.{claim.key}.{own}"
    return text(claim, own) if msg(key) != key else text(claim, "why")


def held(claim: ClaimResult) -> str:
    return msg("results.held", held=claim.held, n=len(claim.comparisons))


def overview_rows(claims: list[ClaimResult]) -> list[dict]:
    return [{msg("results.col.claim"): f"{i}. {msg(f'results.short.{c.key}')}",
             msg("results.col.verdict"): msg(f"results.verdict.{c.verdict}"),
             msg("results.col.held"): f"{c.held} / {len(c.comparisons)}" if c.comparisons else msg("results.no_figure")}
            for i, c in enumerate(claims, 1)]


def _value(c: Comparison, v) -> str:
    return str(int(v)) if c.measure == "best_layer" else fmt("", float(v))


def comparison_rows(claim: ClaimResult) -> list[dict]:
    col = lambda k: msg(f"results.col.{k}")  # noqa: E731
    return [{col("measure"): msg(f"results.measure.{c.measure}"), col("where"): msg(f"results.where.{c.where}"),
             col("a"): f"{msg(f'results.side.{c.a}')}: {_value(c, c.a_value)}",
             col("b"): f"{msg(f'results.side.{c.b}')}: {_value(c, c.b_value)}",
             col("diff"): f"{c.diff:+.3f}" if c.measure != "best_layer" else f"{int(c.diff):+d}",
             col("margin"): f"≥ {c.margin:g}", col("holds"): "✓" if c.holds else "✗"} for c in claim.comparisons]


def nsp_rows(table: dict) -> list[dict]:
    """eval_nsp.json's three rows, (A, B), (B, A), (A, random B), each with its one-sentence reading."""
    col = lambda k: msg(f"nsp.col.{k}")  # noqa: E731
    out = []
    for o in ORDERS:
        r = table["rows"][o]
        out.append({col("pair"): msg(f"nsp.row.{o}"), col("mean_p"): f"{r['mean_p']:.2f}",
                    col("is_next"): f"{r['share_is_next']:.0%}",
                    col("below_true"): f"{r['share_below_true']:.0%}" if o != "true" else msg("results.no_figure")})
    return out


def nsp_readings(table: dict) -> str:
    """One sentence per row of the table, as a Markdown list."""
    rows = table["rows"]
    return "\n".join(msg("nsp.bullet", row=msg(f"nsp.row.{o}"),
                          reading=msg(f"nsp.reading.{o}", is_next=f"{rows[o]['share_is_next']:.0%}",
                                      below=f"{rows[o]['share_below_true']:.0%}")) for o in ORDERS)


LIVE_SAME = 0.1  # a swap that moves P(IsNext) less than this "barely moved" it


def nsp_live_note(p_ab: float, p_ba: float) -> str:
    """One line under the live control: how far swapping moved P(IsNext), pointing to the measured table."""
    d = abs(p_ab - p_ba)
    return msg("nsp.live_same" if d < LIVE_SAME else "nsp.live_differs", d=f"{d:.2f}")


def nsp_table_section(folder, command: str) -> None:
    """The measured NSP table of the pre-training page, read from `folder`/eval_nsp.json (or how to make it)."""
    import streamlit as st

    table = read_table(folder)
    st.markdown(f"**{msg('nsp.table_header')}**")
    if table is None:
        st.info(msg("nsp.missing", command=command))
        return
    st.dataframe(nsp_rows(table), hide_index=True)
    st.markdown(nsp_readings(table))
    share = table.get("order_share")
    if share is not None:
        st.markdown(msg("nsp.topic" if share >= ORDER_SHARE else "nsp.order", share=f"{share:.0%}"))
    src = table.get("sources") or {}
    st.caption(msg("nsp.caption", n=table.get("n", 0), pd=src.get("pd", 0), reviews=src.get("reviews", 0),
                   command=command))
    if table.get("examples"):
        with st.expander(msg("nsp.examples")):
            st.dataframe([{"P(A, B)": f"{e['p_true']:.2f}", "P(B, A)": f"{e['p_swapped']:.2f}",
                           f"P(A, {msg('nsp.col.random_b')})": f"{e['p_random']:.2f}", "A": e["a"], "B": e["b"],
                           msg("nsp.col.random_b"): e["r"]} for e in table["examples"]], hide_index=True)
