"""Plot builders of the mechanics page, on hand-made arrays: values readable back, masked cells left out, user text
escaped, hover naming the token."""

import numpy as np
import plotly.graph_objects as go

from ctxlib.viz import mechanics as vm

TOKENS = ["[CLS]", "<b>", "果", "甜"]


def test_token_matrix_values_hover_and_escaping():
    M = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5
    fig = vm.token_matrix(M, TOKENS, "Q <i>")
    go.Figure(fig.to_dict())  # validates
    h = fig.data[0]
    assert np.allclose(np.array(h.z, dtype=float), M)
    assert h.customdata[1][0] == "1 &lt;b&gt;" and "feature" in h.hovertemplate
    assert list(fig.layout.yaxis.ticktext) == ["[CLS]", "&lt;b&gt;", "果", "甜"]
    assert fig.layout.title.text == "Q &lt;i&gt;" and h.zmin == -5.5 and h.zmax == 5.5


def test_pair_matrix_masks_cells():
    keep = np.tril(np.ones((4, 4), dtype=bool))
    W = np.where(keep, 0.25, 0.0)
    fig = vm.pair_matrix(W, TOKENS, "softmax", keep=keep, probabilities=True)
    go.Figure(fig.to_dict())
    z = fig.data[0].z
    assert z[0][1] is None and z[3][0] == 0.25 and z[2][2] == 0.25
    assert [t.name for t in fig.data[1:]] == ["masked", "masked"]
    assert fig.data[0].customdata[2][1] == ["2 果", "1 &lt;b&gt;"]
    full = vm.pair_matrix(W, TOKENS, "scores")
    assert len(full.data) == 1 and full.data[0].z[0][1] == 0.0


def test_rotary_norms_and_position_figures():
    s = np.array([1.0, 0.5, -0.25])
    fig = vm.rotary_figure(s, "rot")
    assert list(fig.data[0].y) == [1.0, 0.5, -0.25] and list(fig.data[1].y) == [1.0, 1.0]
    parts = {"X": np.ones((4, 4)), "attn": np.zeros((4, 4))}
    nf = vm.norms_figure(parts, TOKENS, "norms")
    assert list(nf.data[0].y) == [2.0] * 4 and list(nf.data[1].y) == [0.0] * 4 and nf.data[0].name == "X"
    pt = vm.position_table(np.eye(3), "pe")
    assert np.allclose(np.array(pt.data[0].z, dtype=float), np.eye(3))
