"""The Results page's text: ctxlib.results' claims, comparisons and figures in the session's language; and the
pre-training page's measured NSP table (eval_nsp.json: true, swapped and random second sentences).

The figures come from the claims (read from the eval files); this module only formats them into the catalogue's
sentences (strings/<lang>/results.toml). A figure that could not be read shows as "–", never as an error."""

from __future__ import annotations

import os
from pathlib import Path

from ctxlib.evaluation.nsp import ORDERS, read_table
from ctxlib.results import (
    EXTRA_ENV,
    ORDER_SHARE,
    ClaimResult,
    Comparison,
    outside_files,
    parse_extra,
)

from .i18n import msg
from .widgets import layer_label

COLOURS = {
    "reproduced": "green",
    "partly": "orange",
    "not_reproduced": "red",
    "incomplete": "violet",
    "missing": "gray",
}  # verdict colours


def fmt(key: str, v) -> str:
    """One figure as shown: shares as percentages, differences signed, counts with separators, layer names
    translated (several layers tied for best joined by ≈)."""
    if v is None:
        return msg("results.no_figure")
    if isinstance(v, str):
        return layer_label(v)
    if isinstance(v, (tuple, list)):
        return " ≈ ".join(layer_label(x) for x in v)
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if key in ("share", "threshold"):
        return f"{v:.0%}"
    if key == "lead":  # the figure a verdict turns on: as many decimals as the files keep
        return f"{v:+.4f}"
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
    """How the claim's measures came out: wins of all, then ties, losses and figures not measured."""
    n = claim.counts
    return msg(
        "results.held", win=n["win"], n=len(claim.comparisons), tie=n["tie"], loss=n["loss"], missing=n["missing"]
    )


def missing_figures(claim: ClaimResult) -> str:
    """The figures a not fully measured claim waits for, each as `file#/key`."""
    return msg("results.missing_figures", figures=", ".join(f"`{f}`" for f in claim.missing_figures))


def overview_rows(claims: list[ClaimResult]) -> list[dict]:
    col = lambda k: msg(f"results.col.{k}")  # noqa: E731
    out = []
    for i, c in enumerate(claims, 1):
        n = c.counts
        out.append(
            {
                col("claim"): f"{i}. {msg(f'results.short.{c.key}')}",
                col("verdict"): msg(f"results.verdict.{c.verdict}"),
                col("held"): f"{n['win']} / {len(c.comparisons)}" if c.comparisons else msg("results.no_figure"),
                col("others"): f"{n['tie']} / {n['loss']} / {n['missing']}",
            }
        )
    return out


def _value(c: Comparison, v, rng) -> str:
    if v is None:
        return msg("results.no_figure")
    if c.measure != "best_layer":  # four decimals, as the eval files keep: a tie at the margin shows as one
        return f"{float(v):.4f}"
    return msg("results.tied_layers", lo=rng[0], hi=rng[1]) if rng and rng[0] != rng[1] else str(int(v))


def _diff(c: Comparison) -> str:
    if not c.measured:
        return msg("results.no_figure")
    lo, hi = c.lead
    one = (lambda x: f"{int(x):+d}") if c.measure == "best_layer" else (lambda x: f"{x:+.4f}")  # noqa: E731
    return one(lo) if lo == hi else f"{one(lo)} … {one(hi)}"


def _row(c: Comparison, a_label: str) -> dict:
    col = lambda k: msg(f"results.col.{k}")  # noqa: E731
    return {
        col("measure"): msg(f"results.measure.{c.measure}"),
        col("where"): msg(f"results.where.{c.where}"),
        col("a"): f"{a_label}: {_value(c, c.a_value, c.a_range)}",
        col("a_from"): c.a_source or msg("results.fixed"),
        col("b"): f"{msg(f'results.side.{c.b}')}: {_value(c, c.b_value, c.b_range)}",
        col("b_from"): c.b_source or msg("results.fixed"),
        col("diff"): _diff(c),
        col("margin"): f"≥ {c.margin:g}",
        col("outcome"): msg(f"results.outcome.{c.outcome}"),
    }


def comparison_rows(claim: ClaimResult) -> list[dict]:
    """One row per measure: the paper's winner and its figure, the other side and its figure (each with the file
    and key it was read from), the difference, the margin a win needs, and the outcome."""
    return [_row(c, msg(f"results.side.{c.a}")) for c in claim.comparisons]


def outside_rows(claim: ClaimResult) -> list[dict]:
    """The outside models' figures in the measured model's place, against the same other side (no verdict)."""
    return [_row(c, msg("results.outside_side", name=name)) for name, c in claim.outside]


def outside_models() -> tuple[dict, list[str]]:
    """({name: folder}, [entries not usable]): the registered models' eval folders (CTXLAB_MODELS, models.toml;
    `python -m ctxlib eval hf:... --task senses` writes there) that hold eval files, then results.EXTRA_ENV's."""
    from ctxlib import registered

    extra, bad = parse_extra(os.environ.get(EXTRA_ENV))
    for e in registered.extra_models():
        d = registered.eval_dir(e.name)
        if e.name not in extra and any(d.glob("eval_*.json")):
            extra[e.name] = d
    return extra, bad


def outside_lines(extra: dict) -> tuple[list[str], list[str]]:
    """(one line per outside model that has eval files, one warning per folder without any)."""
    found = outside_files(extra)
    ok = [
        msg("results.outside_folder", name=k, folder=str(extra[k]), files=", ".join(v)) for k, v in found.items() if v
    ]
    empty = [msg("results.outside_empty", name=k, folder=str(extra[k])) for k, v in found.items() if not v]
    return ok, empty


def nsp_rows(table: dict) -> list[dict]:
    """eval_nsp.json's three rows, (A, B), (B, A), (A, random B), each with its one-sentence reading."""
    col = lambda k: msg(f"nsp.col.{k}")  # noqa: E731
    out = []
    for o in ORDERS:
        r = table["rows"][o]
        out.append(
            {
                col("pair"): msg(f"nsp.row.{o}"),
                col("mean_p"): f"{r['mean_p']:.2f}",
                col("is_next"): f"{r['share_is_next']:.0%}",
                col("below_true"): f"{r['share_below_true']:.0%}" if o != "true" else msg("results.no_figure"),
            }
        )
    return out


def nsp_readings(table: dict) -> str:
    """One sentence per row of the table, as a Markdown list."""
    rows = table["rows"]
    return "\n".join(
        msg(
            "nsp.bullet",
            row=msg(f"nsp.row.{o}"),
            reading=msg(
                f"nsp.reading.{o}",
                is_next=f"{rows[o]['share_is_next']:.0%}",
                below=f"{rows[o]['share_below_true']:.0%}",
            ),
        )
        for o in ORDERS
    )


LIVE_SAME = 0.1  # a swap that moves P(IsNext) less than this "barely moved" it


def nsp_live_note(p_ab: float, p_ba: float) -> str:
    """One line under the live control: how far swapping moved P(IsNext), pointing to the measured table."""
    d = abs(p_ab - p_ba)
    return msg("nsp.live_same" if d < LIVE_SAME else "nsp.live_differs", d=f"{d:.2f}")


def nsp_table_section(folder, command: str) -> None:
    """The measured NSP table of the pre-training page, read from `folder`/eval_nsp.json (or how to make it)."""
    import streamlit as st

    from .teachers import command_line, for_teachers

    table = read_table(folder)
    st.markdown(f"**{msg('nsp.table_header')}**")
    if table is None:
        st.info(msg("nsp.missing"))
        for_teachers([command_line("teachers.eval", command, model="BERT", task="nsp")])
        return
    st.dataframe(nsp_rows(table), hide_index=True)
    st.markdown(nsp_readings(table))
    share = table.get("order_share")
    if share is not None:
        st.markdown(msg("nsp.topic" if share >= ORDER_SHARE else "nsp.order", share=f"{share:.0%}"))
    src = table.get("sources") or {}
    st.caption(msg("nsp.caption", n=table.get("n", 0), pd=src.get("pd", 0), reviews=src.get("reviews", 0)))
    for_teachers(
        [
            f"{msg('teachers.source')}`{Path(folder) / 'eval_nsp.json'}`",
            command_line("teachers.eval", command, model="BERT", task="nsp"),
        ]
    )
    if table.get("examples"):
        with st.expander(msg("nsp.examples")):
            st.dataframe(
                [
                    {
                        "P(A, B)": f"{e['p_true']:.2f}",
                        "P(B, A)": f"{e['p_swapped']:.2f}",
                        f"P(A, {msg('nsp.col.random_b')})": f"{e['p_random']:.2f}",
                        "A": e["a"],
                        "B": e["b"],
                        msg("nsp.col.random_b"): e["r"],
                    }
                    for e in table["examples"]
                ],
                hide_index=True,
            )
