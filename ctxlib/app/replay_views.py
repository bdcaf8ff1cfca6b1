"""The training page's replay views (Streamlit): cached timelines and projections, and one function per view.

The numbers come from ctxlib.replay, the figures from ctxlib.viz.training; everything a slider move needs is cached
by (model, timeline stamp, ...), so moving the slider only builds the figures of the new step (and a step seen before
costs nothing: its figures are cached too, per language)."""

from __future__ import annotations

import streamlit as st

from ctxlib import checkpoint, replay
from ctxlib.explore import find_first
from ctxlib.viz import attention as va
from ctxlib.viz import attention_stats as vs
from ctxlib.viz import training as vt
from ctxlib.viz.common import PLOTLY_CONFIG
from ctxlib.viz.explorer import mark_word

from . import loaders, widgets
from .i18n import escape_md, msg


@st.cache_resource(show_spinner=False, max_entries=8)
def load(name: str, stamp: str) -> replay.Replay:
    """The timeline of checkpoint `name` (stamp = replay.stamp(name): a new file is read again)."""
    return replay.load(name)


@st.cache_resource(show_spinner=False, max_entries=64)
def projection(name: str, stamp: str, word: str, layer: int, same_size: bool) -> replay.Projection:
    return replay.projection(load(name, stamp), word, layer, same_size)


@st.cache_resource(show_spinner=False, max_entries=16)
def head_shares(name: str, stamp: str, i: int):
    return replay.head_shares(load(name, stamp), i)


def _labels(**extra) -> dict[str, str]:
    return {"step": msg("training.axis.step"), "now": msg("training.axis.now"), **extra}


def _chart(key: str, build, wkey: str) -> None:
    st.plotly_chart(loaders.cached_figure(key, build), width="stretch", config=PLOTLY_CONFIG, key=wkey)


def notice(view: str) -> None:
    """The view's one line: what to notice."""
    st.info(msg(f"training.notice.{view}"))


def loss_view(rp: replay.Replay, key: str, k: int) -> None:
    snap, steps = rp.snapshots[k], rp.steps
    cols = st.columns(4)
    cols[0].metric(msg("training.metric.step"), f"{steps[k]:,}")
    cols[1].metric(msg("training.metric.tokens"), f"{int(snap.get('tokens') or 0):,}")
    for col, name, v in ((cols[2], "train", snap.get("train_loss")), (cols[3], "valid", snap.get("valid_loss"))):
        col.metric(msg(f"training.metric.{name}"), "—" if v is None else f"{v:.3f}")
    labels = _labels(
        title=msg("training.loss.title"),
        train=msg("training.loss.train"),
        valid=msg("training.loss.valid"),
        history=msg("training.loss.history"),
        loss=msg("training.loss.axis"),
    )
    _chart(f"loss|{key}|{k}", lambda: vt.loss_figure(replay.losses(rp), rp.loss_history, steps[k], labels), "tr_loss")
    st.caption(msg("training.loss.caption"))
    notice("loss")


def map_view(
    rp: replay.Replay, key: str, k: int, word: str, layer: int, layer_names: list[str], pr: replay.Projection
) -> None:
    left, right = st.columns(2)
    senses, sents = rp.labels(word), rp.sentences(word)

    def build_map():
        hover = [mark_word(s, *find_first(s, word)) for s in sents]
        title = msg("training.map.title", word=word, layer=layer_names[layer], step=f"{rp.steps[k]:,}")
        axes = tuple(msg("training.map.axis", n=j + 1, share=f"{pr.explained[j]:.0%}") for j in range(2))
        return vt.map_figure(pr.coords[k], pr.coords[k - 1] if k > 0 else None, senses, hover, pr.bounds, title, axes)

    with left:
        _chart(f"map|{key}|{word}|{layer}|{k}|{pr.spread.sum()}|{pr.bounds}", build_map, "tr_map")
        if pr.spread[k] == 0:
            st.info(msg("training.map.identical", word=word))
        elif replay.mostly_rounding(pr, k):
            st.warning(msg("training.map.rounding", spread=f"{pr.spread[k]:.3f}", noise=f"{pr.noise[k]:.3f}"))
        st.caption(
            msg("training.map.caption")
            + " "
            + msg("training.map.spread", spread=f"{pr.spread[k]:.3f}", noise=f"{pr.noise[k]:.3f}")
        )
    acc_word = replay.sense_accuracy(rp, word)[:, layer]
    labels = _labels(
        title=msg("training.acc.title"),
        accuracy=msg("training.acc.axis"),
        chance=msg("training.acc.chance"),
        word=msg("training.acc.word", word=word, layer=layer_names[layer]),
    )
    with right:
        _chart(
            f"acc|{key}|{word}|{layer}|{k}",
            lambda: vt.accuracy_figure(
                rp.steps, replay.sense_accuracy(rp), layer_names, rp.steps[k], labels, replay.chance(rp), acc_word
            ),
            "tr_acc",
        )
        st.caption(
            msg(
                "training.acc.caption",
                word=word,
                acc=f"{acc_word[k]:.2f}",
                mean=f"{replay.sense_accuracy(rp)[k, layer]:.2f}",
            )
        )
    notice("map_gpt" if rp.kind == "gpt" else "map")


def guesses(top: list[tuple[str, float]]) -> str:
    """A table cell of the recorded top guesses without <unk> (the token all unknown words share), and the share <unk>
    took: '， 29% · 的 8% · 。 4% · 就 2%（<unk> 8%）'."""
    unk = vt.hidden_share(top)
    return vt.answer_text(top, hide=vt.UNKNOWN) + (msg("guesses.unk_share", p=vt.pct(unk)) if unk > 0 else "")


def answers_view(rp: replay.Replay, key: str, k: int) -> None:
    fm, lm = replay.fill_mask_rows(rp, k), replay.lm_rows(rp, k)
    if fm is None and lm is None:
        st.info(msg(f"training.answers.none_{rp.kind}"))
        widgets.for_teachers(
            [widgets.command_line("teachers.build", checkpoint.rebuild_command(rp.kind), model=rp.kind)]
        )
        return
    hits = replay.answer_hits(rp)
    if fm is not None:
        st.caption(msg("training.answers.fill_mask_intro"))
        rows = [
            {
                msg("training.col.sentence"): r["sentence"],
                msg("training.col.answer"): r["answer"],
                msg("training.col.top"): guesses(r["top"]),
                "✓": "✓" if r["top"] and r["top"][0][0] == r["answer"] else "",
            }
            for r in fm
        ]
    else:
        gpt = rp.kind == "gpt"
        st.caption(msg(f"training.answers.{'gpt' if gpt else 'elmo'}_intro"))
        rows = []
        for r in lm:
            row = {
                msg("training.col.prompt" if gpt else "training.col.sentence"): (r["prompt"] + "…")
                if gpt
                else r["text"],
                msg("training.col.answer" if gpt else "training.col.word"): r["word"],
                msg("training.col.next" if gpt else "training.col.forward"): guesses(r["forward"]),
            }
            if r["backward"] is not None:
                row[msg("training.col.backward")] = guesses(r["backward"])
            rows.append(row)
    st.dataframe(rows, hide_index=True, height=420)
    st.caption(msg("guesses.unk_note"))
    right, _ = st.columns(2)
    if hits is not None:
        counts, total = hits
        names = {
            h: msg(
                "training.answers.hits_next" if h == "forward" and rp.kind == "gpt" else f"training.answers.hits_{h}"
            )
            for h in counts
        }
        labels = _labels(title=msg("training.answers.hits_title", n=total), count=msg("training.answers.hits_axis"))
        with right:
            _chart(
                f"hits|{key}|{k}",
                lambda: vt.hits_figure(rp.steps, counts, total, rp.steps[k], names, labels),
                "tr_hits",
            )
    notice("answers_bert" if fm is not None else f"answers_{rp.kind}")


def attention_view(rp: replay.Replay, name: str, stamp: str, k: int) -> None:
    sents = replay.attention_sentences(rp)
    if not sents:
        st.info(msg(f"training.attention.none_{rp.kind}"))
        widgets.for_teachers(
            [widgets.command_line("teachers.build", checkpoint.rebuild_command(rp.kind), model=rp.kind)]
        )
        return
    a0 = replay.attention(rp, 0, k)
    n_layers, n_heads = a0.shape[:2]
    c1, c2, c3 = st.columns([3, 1, 1])
    i = c1.selectbox(
        msg("training.attention.sentence"),
        list(range(len(sents))),
        format_func=lambda j: sents[j][0],
        key="tr_att_sent",
    )
    layer = c2.selectbox(
        msg("training.attention.layer"), list(range(n_layers)), format_func=lambda j: f"{j + 1}", key="tr_att_layer"
    )
    head = c3.selectbox(
        msg("training.attention.head"), list(range(n_heads)), format_func=lambda j: f"{j + 1}", key="tr_att_head"
    )
    gpt = rp.kind == "gpt"
    ax = vs.AxisLabels(*(msg(f"labels.attention.{f}") for f in vs.AxisLabels._fields))
    left, right = st.columns(2)
    key = f"{name}|{stamp}"
    with left:
        _chart(
            f"att|{key}|{i}|{layer}|{head}|{k}",
            lambda: va.attention_heatmap(
                replay.attention(rp, i, k)[layer, head],
                sents[i][1],
                causal=gpt,
                masked_label=msg("attention.gpt.masked"),
                labels=ax,
                height=360,
                title=msg("training.attention.map_title", layer=layer + 1, head=head + 1, step=f"{rp.steps[k]:,}"),
            ),
            "tr_att_map",
        )
    shares = head_shares(name, stamp, i)
    keys = ("prev", "self", "cls") if gpt else replay.SHARES
    names = {m: msg(f"training.attention.share_{m}") for m in keys}
    labels = _labels(
        title=msg("training.attention.shares_title", layer=layer + 1, head=head + 1),
        share=msg("training.attention.share_axis"),
    )
    with right:
        _chart(
            f"shares|{key}|{i}|{layer}|{head}|{k}",
            lambda: vt.shares_figure(
                rp.steps, {m: shares[m][:, layer, head] for m in keys}, rp.steps[k], names, labels
            ),
            "tr_att_shares",
        )
        now = vs.head_summaries(replay.attention(rp, i, k), sents[i][1], causal=gpt)
        kinds = [vs.kind_label(r["kind"], ax) for r in now]
        st.caption(
            msg(
                "training.attention.kinds",
                kinds=escape_md(
                    ", ".join(
                        f"{r['layer']}.{r['head']} {kd}"
                        for r, kd in zip(now, kinds)
                        if kd not in (ax.kind_broad, ax.kind_mixed)
                    )
                    or "—"
                ),
            )
        )
    notice("attention_gpt" if gpt else "attention")


def file_sizes(rp: replay.Replay) -> str:
    sizes = [(rp.path / f).stat().st_size for f in ("timeline.json", "timeline.npz")]
    widgets.for_teachers(
        [msg("teachers.timeline_files", json=f"{sizes[0] / 1024:,.0f}", npz=f"{sizes[1] / 1024:,.0f}")]
    )
    return msg(
        "training.files",
        n=len(rp.steps),
        last=f"{rp.steps[-1]:,}",
        planned=f"{int(rp.data.get('planned_steps') or rp.steps[-1]):,}",
    )


def ensure_index(steps: list[int]) -> int:
    """The replay's step index `tr_k`: from ?step= (the nearest recorded step) on the first run, clamped when the
    model (and its number of recorded steps) changes."""
    i = st.session_state.get("tr_k")
    if not isinstance(i, int):
        i = replay.nearest_index(steps, st.query_params.get("step", steps[-1]))
    st.session_state["tr_k"] = min(max(i, 0), len(steps) - 1)
    st.session_state.setdefault("tr_gen", 0)
    return st.session_state["tr_k"]


def set_index(k: int) -> None:
    """Move the replay to step index k (play, restart): a new slider widget (key tr_i<gen>) shows it. Setting the old
    widget's state instead loses a race: a play tick sent by the browser before it had drawn the last step would carry
    the slider's previous value back and undo the move."""
    st.session_state["tr_k"] = k
    st.session_state["tr_gen"] = st.session_state.get("tr_gen", 0) + 1


def step_slider(steps: list[int], label: str, help: str) -> int:
    """The slider over the recorded steps; the user's move becomes the replay's step index."""
    k = st.session_state["tr_k"]
    v = st.select_slider(
        label,
        list(range(len(steps))),
        value=k,
        format_func=lambda i: f"{steps[i]:,}",
        key=f"tr_i{st.session_state['tr_gen']}",
        help=help,
    )
    if v != k:
        st.session_state["tr_k"] = k = v
    return k
