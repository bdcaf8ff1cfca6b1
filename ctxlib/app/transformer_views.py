"""Parts of the Transformer mechanics page (pages/4_Transformer.py): its one way of drawing a chart, and the last
step, how the model knows positions (learned table or rotary, against the sinusoidal table of Vaswani et al. 2017)."""

import streamlit as st

from ctxlib import mechanics as mech
from ctxlib.app.i18n import escape_md, msg
from ctxlib.viz import mechanics as vm


def fig(title_id: str, build, *args, where: str, lab, col=st, tag=True, **kw) -> None:
    """One chart titled mechanics.fig.<title_id> (with the layer and head, `where`, when `tag`), keyed by its id."""
    title = msg(f"mechanics.fig.{title_id}") + (f" · {where}" if tag else "")
    col.plotly_chart(build(*args, title=title, labels=lab, **kw), width="stretch", key=f"mx_{title_id}")


def repeated_char_note(rep: dict) -> str:
    """What the layer-0 vectors of a repeated character say (mechanics.repeated_char_check's record): the same vector or
    not, with the measured differences. The Transformer page's positions tab and the lesson's positions step."""
    return msg(
        f"mechanics.positions.{'same' if rep['layer0_max_diff'] == 0 else 'differs'}",
        char=escape_md(rep["char"]),
        i=rep["positions"][0],
        j=rep["positions"][1],
        diff=rep["layer0_max_diff"],
        diff1=rep["layer1_max_diff"],
        text=escape_md(rep["text"]),
    )


def positions_tab(tr: mech.BlockTrace, rep: dict, enc, fig) -> None:
    """A repeated character's layer-0 vectors (same or not), then the model's position scheme and the sinusoids."""
    cfg, toks = enc.model.cfg, tr.tokens
    st.markdown(repeated_char_note(rep))
    at = [f"{rep['char']} @{p}" for p in rep["positions"]]
    fig("layer0", vm.token_matrix, rep["layer0"], at, height=220, tag=False)
    if tr.rotary:
        q1, q2 = st.columns(2)
        qi = q1.selectbox(
            msg("mechanics.positions.query"),
            range(len(toks)),
            min(1, len(toks) - 1),
            format_func=lambda i: f"{i} {toks[i]}",
            key=f"mx_qtok_{len(toks)}",
        )
        ki = q2.selectbox(
            msg("mechanics.positions.key"),
            range(len(toks)),
            min(2, len(toks) - 1),
            format_func=lambda i: f"{i} {toks[i]}",
            key=f"mx_ktok_{len(toks)}",
        )
        st.caption(msg("mechanics.positions.rotary"))
        fig("rotary", vm.rotary_figure, mech.rotary_by_distance(tr.q_raw[qi], tr.k_raw[ki], cfg.max_len - 1))
    else:
        st.caption(msg("mechanics.positions.learned"))
        fig("learned", vm.position_table, mech.learned_positions(enc.model), tag=False)
    st.caption(msg("mechanics.positions.sinusoidal"))
    fig("sinusoidal", vm.position_table, mech.sinusoidal_table(cfg.max_len, cfg.hidden), tag=False)
