"""AppTest for the Polysemy atlas: corpus occurrences, layer slider, colourings, clusters, self-similarity."""

import json
from pathlib import Path

import app_fakes
import pytest
from app_pages import teachers_text
from streamlit.testing.v1 import AppTest

from ctxlib import corpus
from ctxlib.examples import EXAMPLE_SETS
from ctxlib.tokens import find_all

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "2_Polysemy_atlas.py")
TITLE = "Polysemy atlas: every occurrence in the corpus"


def fake_occurrences(word, source="all", split=None, cap=500, seed=0):
    ex = EXAMPLE_SETS.get(word)
    if ex is None:
        return [], 0
    occ = []
    for i, (s, lab) in enumerate(ex["sentences"]):
        a, b = find_all(s, word)[0]
        occ.append(corpus.Occurrence(s, a, b, "n" if lab == "名词" else "v", "pd" if i % 3 else "reviews", "train"))
    return occ[:cap], len(occ)


@pytest.fixture
def fakes(monkeypatch):
    monkeypatch.setattr(corpus, "occurrences", fake_occurrences)
    return app_fakes.install(monkeypatch)


def _run(**qp):
    at = AppTest.from_file(PAGE, default_timeout=60)
    for k, v in qp.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def test_atlas_default_renders(fakes):
    at = _run(lang="en")
    assert at.title[0].value == TITLE
    assert len(at.get("plotly_chart")) == 2  # the atlas and the self-similarity chart
    assert "12 occurrences in the corpus" in " ".join(c.value for c in at.caption)
    assert at.radio(key="at_model").value == "elmo" and at.text_input(key="at_word_w").value == "地"  # ATLAS_DEFAULT


def test_atlas_kmeans_labels_clusters_and_layers(fakes):
    at = _run(lang="en", word="活动", colour="kmeans", model="elmo")
    assert at.radio(key="at_colour").value == "kmeans"
    table = at.dataframe[0].value
    assert len(table) == 3 and table.iloc[:, 1].sum() == 12
    at.select_slider(key="at_layer").set_value(0).run()
    assert not at.exception
    assert at.query_params["layer"] in ("0", ["0"])


def test_atlas_link_restores_layer_k_and_survives_model_switch(fakes):
    at = _run(lang="en", word="活动", colour="kmeans", k="2", layer="1", model="bert", cap="100")
    assert at.slider(key="at_k").value == 2 and at.select_slider(key="at_layer").value == 1
    assert len(at.dataframe[0].value) == 2
    at.select_slider(key="at_layer").set_value(3).run()
    at.radio(key="at_model").set_value("word2vec").run()  # one layer: the stale layer 3 must not break the page
    assert not at.exception
    title = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert title == "活动 · word2vec · type vector · PCA"  # the map is word2vec's, at its only layer
    assert at.query_params["model"] in ("word2vec", ["word2vec"]) and at.query_params["layer"] in ("0", ["0"])
    assert "at_layer" not in [s.key for s in at.select_slider]  # nothing to choose
    table = at.dataframe[0].value  # one vector per type: every occurrence is the same point, so one cluster
    assert len(table) == 1 and table.iloc[0, 1] == 12
    at.radio(key="at_model").set_value("elmo").run()  # back to a deep model: its top layer
    title = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert title == "活动 · elmo · layer 2 · PCA" and at.select_slider(key="at_layer").value == 2
    at.select_slider(key="at_layer").set_value(1).run()
    at.radio(key="at_model").set_value("bert").run()  # the same relative depth: ELMo's 1 of 0..2 is BERT's 2 of 0..3
    assert at.select_slider(key="at_layer").value == 2 and at.query_params["layer"] in ("2", ["2"])
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"] == "活动 · bert · layer 2 · PCA"


def test_atlas_word_without_occurrences(fakes):
    at = _run(lang="en", word="龘靐")
    assert "too few for an atlas" in " ".join(w.value for w in at.warning).replace("\\", "")
    assert not at.get("plotly_chart")


def test_atlas_empty_word(fakes):
    at = _run(lang="en")
    at.text_input(key="at_word_w").set_value("  ").run()
    assert not at.exception and at.info


def test_atlas_real_corpus():
    """The real corpus and whatever checkpoint exists (slow the first time: the corpus loads in ~10 s)."""
    from ctxlib import checkpoint

    if not checkpoint.available():
        pytest.skip("no checkpoints in checkpoints/ yet (python -m ctxlib train word2vec)")
    import streamlit as st

    st.cache_data.clear()
    at = _run(lang="en", word="发展", cap="50", colour="pos", model="word2vec")
    assert at.title[0].value == TITLE and not at.error
    assert "a random sample of 50" in " ".join(c.value for c in at.caption)


def test_atlas_compare_models(fakes):
    import json

    at = _run(lang="en", word="发展")
    at.checkbox(key="at_compare").check().run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    legend = [tr["name"] for tr in spec["data"] if tr.get("showlegend", True)]
    assert legend == ["word2vec", "elmo", "bert", "gpt", "self-similarity", "random-token baseline"]  # MODEL_ORDER
    gpt = [tr for tr in spec["data"] if tr.get("legendgroup") == "gpt"]
    assert len(gpt) == 2 and [tr["line"].get("dash") for tr in gpt] == ["solid", "dot"]


def test_atlas_colouring_and_self_similarity(fakes):
    import numpy as np

    from ctxlib import explore, explore_atlas

    d = explore_atlas.atlas_sample(app_fakes.fakes()["elmo"], "活动", cap=100)
    assert len(d.texts) == 12
    cats, words = explore.atlas_colouring(d, "pos", 2, 3, "活动", "none", {})
    assert cats == d.tags and words is None  # fake_occurrences tags every occurrence
    cats, words = explore.atlas_colouring(d, "source", 2, 3, "活动", "none", {"pd": "People's Daily"})
    assert set(cats) == {"People's Daily", "reviews"} and words is None
    cats, words = explore.atlas_colouring(d, "kmeans", 2, 3, "活动", "none", {})
    assert set(cats) <= {"C1", "C2", "C3"} and set(words) == set(cats)
    assert all("活动" not in ws for ws in words.values())
    d.tags[0] = None
    assert explore.atlas_colouring(d, "pos", 2, 3, "活动", "none (reviews)", {})[0][0] == "none (reviews)"
    names, self_sim, base = explore.self_similarity_curves(d)
    assert names == d.layer_names and len(self_sim) == len(base) == 3
    assert np.isclose(self_sim[0], 1.0)  # layer 0 is context-free: every occurrence has the same vector
    assert all(abs(v) <= 1 + 1e-9 for v in self_sim + base)


def test_atlas_with_gpt_selected(fakes):
    import json

    at = _run(lang="en", word="活动", model="gpt", colour="kmeans", k="2")
    assert at.radio(key="at_model").value == "gpt" and not at.error
    assert at.radio(key="at_model").options == ["word2vec", "elmo", "bert", "gpt"]
    assert at.select_slider(key="at_layer").value == 4  # the top of its five layers
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert "活动 · gpt · layer 4" in specs[0]["layout"]["title"]["text"]
    assert [tr["name"] for tr in specs[1]["data"] if tr.get("showlegend", True)] == [
        "gpt",
        "self-similarity",
        "random-token baseline",
    ]
    at.select_slider(key="at_layer").set_value(0).run()
    assert not at.exception and at.query_params["model"] in ("gpt", ["gpt"])
    at.checkbox(key="at_compare").check().run()
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert {tr["legendgroup"] for tr in spec["data"]} >= {"gpt", "word2vec", "elmo", "bert"}


def test_atlas_without_gpt(monkeypatch):
    """No GPT checkpoint: a link asking for GPT opens the default model; GPT is named in the sidebar with its build command."""
    import json

    monkeypatch.setattr(corpus, "occurrences", fake_occurrences)
    app_fakes.install(monkeypatch, names=("word2vec", "elmo", "bert"))
    for lang in ("en", "zh"):
        at = _run(lang=lang, word="活动", model="gpt")
        assert at.radio(key="at_model").value == "elmo" and "gpt" not in at.radio(key="at_model").options  # the default
        assert "python -m ctxlib train gpt" in teachers_text(at)
        assert not at.error and len(at.get("plotly_chart")) == 2
    at.checkbox(key="at_compare").check().run()
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert {tr["legendgroup"] for tr in spec["data"] if not tr["legendgroup"].startswith("_")} == {
        "word2vec",
        "elmo",
        "bert",
    }


def test_atlas_default_model_with_gpt_present(fakes):
    assert _run(lang="en").radio(key="at_model").value == "elmo"


def test_atlas_tag_legend_and_separation(fakes):
    """Issue #13.6: the raw tags are explained in both languages, and the page says how well the layer separates them
    against always guessing the commonest tag."""
    from ctxlib import explore, explore_atlas

    at = _run(lang="en", word="活动", model="elmo", layer="2")
    legend = at.dataframe[0].value
    assert list(legend.columns) == ["tag", "meaning", "occurrences here"]
    assert dict(zip(legend["tag"], legend["meaning"])) == {"n": "noun", "v": "verb"}
    d = explore_atlas.atlas_sample(app_fakes.fakes()["elmo"], "活动", cap=300)
    acc, majority, counts = explore.atlas_tag_accuracy(d, 2)
    note = [c.value for c in at.caption if "leave-one-out" in c.value]
    assert note and f"{acc:.2f}" in note[0] and f"{majority:.2f}" in note[0]
    zh = _run(lang="zh", word="活动", model="elmo")
    assert dict(zip(zh.dataframe[0].value["标记"], zh.dataframe[0].value["含义"])) == {"n": "名词", "v": "动词"}
    hover = json.loads(zh.get("plotly_chart")[0].proto.spec)["data"][0]["text"]
    assert all("pd" not in h.split("<br>")[-1] and "reviews" not in h for h in hover)  # source names in Chinese
    assert any("人民日报" in h for h in hover)


def test_atlas_tag_accuracy_at_chance_says_why(fakes, monkeypatch):
    from ctxlib import explore

    monkeypatch.setattr(explore, "atlas_tag_accuracy", lambda d, layer, min_count=5: (0.5, 0.55, {"v": 11, "n": 9}))
    at = _run(lang="en", word="活动")
    warn = " ".join(w.value for w in at.warning).replace("\\", "")  # markdown escapes off
    assert "no better than always guessing" in warn and "(n) has only 9" in warn


@pytest.mark.parametrize(
    "word,expect",
    [
        ("", "info"),
        ("龘靐", "warning"),
        ("活" * 5000, None),
        ("<script>alert(1)</script>", None),
        ("活动", None),
    ],
)
def test_atlas_bad_input_with_gpt(fakes, word, expect):
    at = _run(lang="en", model="gpt")
    at.text_input(key="at_word_w").set_value(word).run()
    assert not at.exception and not at.error
    if expect:
        assert getattr(at, expect)
    for chart in at.get("plotly_chart"):
        assert "<script>" not in chart.proto.spec
    at = _run(lang="en", model="gpt", word=word)  # the same word from a link (the box keeps 12 characters)
    assert not at.exception and len(at.text_input(key="at_word_w").value) <= 12


def test_atlas_model_switch_keeps_the_relative_depth(fakes):
    """ELMo's top layer -> BERT's top layer, not BERT's layer 2; the bottom stays the bottom; word2vec in between
    keeps the layer."""
    import json

    def shown(at):
        return at.select_slider(key="at_layer").value, json.loads(at.get("plotly_chart")[0].proto.spec)["layout"][
            "title"
        ]["text"]

    at = _run(lang="en", word="活动", model="elmo")  # fakes: elmo 3 layers, bert 4, gpt 5
    assert shown(at)[0] == 2
    at.radio(key="at_model").set_value("bert").run()
    assert shown(at)[0] == 3 and "· bert · layer 3 ·" in shown(at)[1] and at.query_params["layer"] in ("3", ["3"])
    at.select_slider(key="at_layer").set_value(0).run()
    at.radio(key="at_model").set_value("gpt").run()
    assert shown(at)[0] == 0
    at.select_slider(key="at_layer").set_value(2).run()
    at.radio(key="at_model").set_value("elmo").run()
    assert shown(at)[0] == 1  # the middle stays the middle
    at.radio(key="at_model").set_value("word2vec").run()
    at.radio(key="at_model").set_value("bert").run()
    assert not at.exception and shown(at)[0] == 2  # 1 of 0..2 -> 1.5 of 0..3, rounded up


def test_same_depth():
    from ctxlib.explore import same_depth

    assert [same_depth(j, 3, 5) for j in range(3)] == [0, 2, 4]
    assert [same_depth(j, 5, 3) for j in range(5)] == [0, 1, 1, 2, 2]
    assert [same_depth(j, 3, 4) for j in range(3)] == [0, 2, 3]
    assert same_depth(3, 4, 1) == 0 and same_depth(0, 1, 4) == 3 and same_depth(9, 3, 5) == 4


def test_atlas_tag_accuracy_counts_frequent_tags_only():
    import numpy as np

    from ctxlib import explore, explore_atlas

    v = np.array([[1, 0], [1, 0.1], [0.9, 0], [0, 1], [0.1, 1], [0, 0.9], [1, 1]], np.float32)[:, None, :]
    d = explore_atlas.AtlasSample(
        texts=[""] * 7,
        spans=[(0, 0)] * 7,
        tags=["u", "u", "u", "n", "n", "n", "v"],
        sources=["pd"] * 7,
        total=7,
        vecs=v,
        base=v,
        contexts=[[]] * 7,
        layer_names=["x"],
    )
    acc, majority, counts = explore.atlas_tag_accuracy(d, 0, min_count=2)
    assert counts == {"u": 3, "n": 3} and majority == 0.5 and acc == 1.0  # v (once) left out
    assert explore.atlas_tag_accuracy(d, 0, min_count=4) is None
    assert explore.at_chance([0.52, 0.55], 0.5) and not explore.at_chance([0.52, 0.56], 0.5)
    rows = [
        {"source": "pd", "sense": None, "train": 3},
        {"source": "reviews", "sense": None, "train": 2},
        {"source": "supplement", "sense": "品牌", "train": 4},
    ]
    diag = explore.chance_diagnosis(["水果", "品牌", "水果", None, "品牌", "品牌"], rows)
    assert diag["smallest"] == ("水果", 2) and diag["few"] and diag["corpus"] == {"pd": 3, "reviews": 2}
    assert diag["senses"] == {"品牌": 4} and diag["rare"]
