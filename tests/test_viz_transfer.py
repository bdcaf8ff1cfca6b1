"""ctxlib.viz.transfer (the [CLS] head, TagLM and CoVe diagrams) and viz.transfer_runs (the live run's plots)."""

import json

from ctxlib.viz import transfer, transfer_runs

CLS = {k: k.upper() for k in transfer.CLS_LABELS} | {"layer": "L{n}"}


def _texts(fig) -> str:
    d = fig.to_plotly_json()
    return json.dumps(
        [a.get("text") for a in d["layout"].get("annotations", [])]
        + [t for tr in d["data"] for t in (tr.get("text") or []) if isinstance(t, str)],
        ensure_ascii=False,
    )


def test_cls_head_draws_each_layer_and_the_head():
    toks = ["[CLS]"] + list("房间干净") + ["[SEP]"]
    fig = transfer.cls_head_figure(toks, 4, CLS)
    t = _texts(fig)
    for j in range(1, 5):
        assert f'"L{j}"' in t
    assert '"L5"' not in t and "POOLER" in t and "HEAD" in t and "NEG" in t and "POS" in t and "p = " not in t
    cells = fig.data[0]
    assert len(cells.x) == 4 * len(toks) and list(cells.marker.color).count(transfer.HEAD_C) == 4  # the [CLS] column
    probs = _texts(transfer.cls_head_figure(toks, 2, CLS, probs=(0.2, 0.8)))
    assert "p = 0.20" in probs and "p = 0.80" in probs


def test_cls_head_shortens_long_reviews_and_escapes():
    toks = ["[CLS]"] + list("很好" * 20) + ["<script>", "[SEP]"]
    fig = transfer.cls_head_figure(toks, 2, CLS, max_tokens=10)
    shown = list(fig.data[1].text)
    assert len(shown) == 10 and shown[0] == "[CLS]" and shown[-2:] == ["…", "[SEP]"]
    assert "<script>" not in json.dumps(fig.to_plotly_json())
    fig = transfer.cls_head_figure(["[CLS]", "&lt;b&gt;", "<b>", "[SEP]"], 2, CLS)
    assert "&lt;b&gt;" in list(fig.data[1].text)


def test_taglm_and_cove_use_every_label():
    for build, keys in ((transfer.taglm_figure, transfer.TAGLM_LABELS), (transfer.cove_figure, transfer.COVE_LABELS)):
        t = _texts(build({k: f"@{k}@" for k in keys}))
        assert all(f"@{k}@" in t for k in keys), [k for k in keys if f"@{k}@" not in t]


def test_history_spans_all_steps_and_comparison_marks_missing():
    pts = [{"step": 1, "loss": 0.7, "acc": 0.5}, {"step": 2, "loss": 0.6, "acc": 1.0}]
    fig = transfer_runs.history_figure(pts, 40, {"loss": "loss", "acc": "acc", "mean": "mean", "step": "step"})
    assert list(fig.layout.xaxis.range) == [0, 40.5] and list(fig.data[2].y) == [0.5, 0.75]
    fig = transfer_runs.comparison_figure(
        [("a", 0.7), ("b", None)], 0.52, {"title": "T", "accuracy": "acc", "majority": "maj {v:.2f}", "missing": "none"}
    )
    bar = fig.data[0]
    assert list(bar.y) == ["b", "a"] and list(bar.text) == ["none", "0.700"]
    assert "maj 0.52" in json.dumps(fig.to_plotly_json())
