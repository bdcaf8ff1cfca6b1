"""Each lesson step's live view (ctxlib.lesson_compute) on small stand-in models built here, no checkpoint loaded: the
view runs the model named for the step on the step's own inputs (the control of a swapped pair really is swapped),
returns what the page draws (the chart's rows and labels, the table, the metrics) and the answer text is filled from
that output. The slow walk of the shipped lesson on the shipped models is tests/test_app_lesson.py."""

import json

import numpy as np
import pytest
import torch
from app_fakes import FakeEncoder, FakeGpt, fakes

from ctxlib import kinds, lesson, lesson_compute, lesson_facts
from ctxlib.corpus import Paragraph
from ctxlib.encoder import OutOfVocabulary
from ctxlib.lesson import LessonError, Step
from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer
from ctxlib.models.bert_encoder import BertEncoder
from ctxlib.training.bert_data import make_example
from ctxlib.vecmath import cosine


def _step(kind, **params) -> Step:
    return Step(kind, {}, {}, {}, None, params)


def _answer(kind, params, data, words=None, **texts) -> str:
    """The English answer a student reads: `texts["en"]` filled from `data` (a step parsed like a lesson file)."""
    step = Step(kind, {}, {}, {"zh": texts.get("zh", "-"), "en": texts["en"]}, None, params)
    return lesson.answer(step, data, "en", words)


def test_an_unknown_kind_is_named_with_the_known_ones():
    with pytest.raises(LessonError) as e:
        lesson_compute.compute(_step("wordcloud"), fakes().__getitem__)
    assert e.value.code == "unknown_kind" and e.value.step is None
    assert str(e.value) == f'unknown view kind "wordcloud" (known kinds: {", ".join(lesson.KINDS)})'


# -- NSP: A then B, and the control B then A ----------------------------------------------------------------------
class _Nsp:
    """P(IsNext) by the order of the two parts (an unknown pair raises: the view may ask only for these two)."""

    def __init__(self, table):
        self.table, self.calls = table, []

    def next_sentence(self, a, b):
        self.calls.append((a, b))
        return self.table[(a, b)]


@pytest.mark.parametrize("ab, ba, order", [(0.875, 0.25, "lower"), (0.25, 0.875, "higher"), (0.5, 0.5, "same")])
def test_nsp_runs_the_pair_and_its_swap(ab, ba, order):
    a, b = "今天下了一场大雨。", "路上的行人都打着伞。"
    bert = _Nsp({(a, b): ab, (b, a): ba})
    d = lesson_compute.compute(_step("nsp", a=a, b=b), {"bert": bert}.__getitem__)
    assert d == {"ab": ab, "ba": ba} and bert.calls == [(a, b), (b, a)]  # the control is the swapped pair
    text = _answer("nsp", {"a": a, "b": b}, d, en="A then B: {ab}; B then A: {ba}, {order}.")
    assert text == f"A then B: {ab:.2f}; B then A: {ba:.2f}, {lesson_facts.WORDS[order]}."


# -- fill_mask: the top 5 per [MASK] and the original character's rank in the whole vocabulary ---------------------
class _Mask:
    """Two [MASK]s; `fill_mask` returns as many candidates as asked for (the whole vocabulary when asked for it)."""

    VOCAB = [("的", 0.4), ("京", 0.2), ("方", 0.1), ("天", 0.08), ("下", 0.06), ("上", 0.05), ("海", 0.004)]

    def fill_mask(self, text, topk=5):
        assert text.count("[MASK]") == 2
        return [
            {"index": i, "char_offset": i, "candidates": (self.VOCAB if i == 2 else self.VOCAB[::-1])[:topk]}
            for i in (2, 5)
        ]


def test_fill_mask_shows_five_candidates_per_mask_and_ranks_each_answer_char():
    load = {"bert": _Mask()}.__getitem__
    d = lesson_compute.compute(_step("fill_mask", text="北[MASK]是[MASK]", answer="海京"), load)
    assert [m["index"] for m in d["masks"]] == [2, 5]  # the chart's panels, one per [MASK], in order
    assert [c for c, _ in d["masks"][0]["candidates"]] == ["的", "京", "方", "天", "下"]
    assert [c for c, _ in d["masks"][1]["candidates"]] == ["海", "上", "下", "天", "方"]
    assert d["answer"] == [{"char": "海", "rank": 7, "prob": 0.004}, {"char": "京", "rank": 6, "prob": 0.2}]
    text = _answer("fill_mask", {"answer": "海京"}, d, en="top {top} ({top_p}); {answer} ranked {rank} ({p})")
    assert text == "top 的 (40.0%); 海 ranked 7 (0.40%)"
    one = lesson_compute.compute(_step("fill_mask", text="北[MASK]是[MASK]", answer="龙"), load)
    assert one["answer"] == [{"char": "龙", "rank": None, "prob": None}, {"char": None, "rank": None, "prob": None}]
    none = lesson_compute.compute(_step("fill_mask", text="北[MASK]是[MASK]"), load)
    assert none["answer"] == [{"char": None, "rank": None, "prob": None}] * 2
    text = _answer("fill_mask", {"answer": "龙"}, one, en="{answer} ranked {rank} ({p}), top {top}")
    assert text == "龙 ranked ? (?), top 的"  # not in the vocabulary: no rank made up


# -- next_char: GPT's top 5 and the answer's rank ----------------------------------------------------------------
def test_next_char_ranks_the_answer_after_the_prompt():
    gpt = FakeGpt()
    d = lesson_compute.compute(_step("next_char", prompt="北京是中国的首", answer="都"), {"gpt": gpt}.__getitem__)
    assert d["candidates"] == gpt.next_char("北京是中国的首", lesson.TOPK)  # the chart's bars
    assert d["answer"] == gpt.char_rank("北京是中国的首", "都") and d["answer"]["token"] == "都"
    plain = lesson_compute.compute(_step("next_char", prompt="北京是中国的首"), {"gpt": gpt}.__getitem__)
    assert "answer" not in plain
    top, p = d["candidates"][0]
    r = d["answer"]
    text = _answer("next_char", {"answer": "都"}, d, en="top {top} ({top_p}); {answer} is ranked {rank} ({p})")
    want = f"{r['rank']} ({lesson_facts.pct(r['prob'])})" if r["rank"] else "? (?)"
    assert text == f"top {top} ({lesson_facts.pct(p)}); 都 is ranked {want}"


# -- attention: one head of one layer ----------------------------------------------------------------------------
class _Heads(FakeEncoder):
    """A bidirectional stand-in with 3 layers x 2 heads, each head its own pattern; layer 3 head 2 looks at the next
    token from every row but row 1."""

    def __init__(self):
        super().__init__("bert", 4, chars=True)

    def encode_tokens(self, batch, texts):
        out = super().encode_tokens(batch, texts)
        for e in out:
            T = len(e.tokens)
            rng = np.random.default_rng(T)
            att = rng.random((3, 2, T, T)).astype(np.float32)
            att[2, 1] = 0.01
            for i in range(T - 1):
                att[2, 1, i, i + 1 if i != 1 else 0] = 1.0
            e.attentions = att / att.sum(-1, keepdims=True)
        return out


def test_attention_shows_the_chosen_head_and_counts_next_token_rows():
    load = {"bert": _Heads(), "gpt": FakeGpt()}.__getitem__
    d = lesson_compute.compute(_step("attention", text="我用苹果手机", layer=3, head=2), load)
    e = load("bert").encode(["我用苹果手机"])[0]
    assert d["model"] == "bert" and d["tokens"] == list(e.tokens) == list("我用苹果手机")
    assert np.array_equal(d["att"], e.attentions[2, 1])
    assert (d["layer"], d["head"], d["n_layers"], d["n_heads"]) == (3, 2, 3, 2)  # the chart's title
    text = _answer("attention", {}, d, en="In {next_rows} of the {rows} rows")
    assert text == "In 4 of the 5 rows"
    last = lesson_compute.compute(_step("attention", text="我用苹果手机"), load)  # default: the last layer, head 1
    assert (last["layer"], last["head"]) == (3, 1) and np.array_equal(last["att"], e.attentions[2, 0])
    g = lesson_compute.compute(_step("attention", text="我用苹果", model="gpt", layer=1, head=2), load)
    assert g["model"] == "gpt" and g["tokens"][0] == "[CLS]"


@pytest.mark.parametrize(
    "params, field, hi", [({"layer": 4}, "layer", 3), ({"layer": 0}, "layer", 3), ({"head": 3}, "head", 2)]
)
def test_attention_refuses_a_layer_or_head_the_model_lacks(params, field, hi):
    with pytest.raises(LessonError) as e:
        lesson_compute.compute(_step("attention", text="我用苹果手机", **params), {"bert": _Heads()}.__getitem__)
    assert e.value.code == "bad_number" and e.value.values == {"field": field, "lo": 1, "hi": hi}


def test_attention_on_a_model_without_attention_names_the_models_that_have_it():
    with pytest.raises(LessonError) as e:
        lesson_compute.compute(_step("attention", text="我用苹果", model="elmo"), fakes().__getitem__)
    assert e.value.code == "bad_model" and e.value.values == {"model": "elmo", "models": "bert, gpt"}


# -- cosine: the word's top-layer vector in sentence 1 against the others ----------------------------------------
def test_cosine_rows_are_each_models_top_layer_cosines():
    encs = fakes()
    sents = ["苹果很好吃", "我吃苹果", "苹果手机"]
    d = lesson_compute.compute(_step("cosine", word="苹果", sentences=sents), encs.__getitem__)
    assert [m for m, _, _ in d["rows"]] == list(kinds.names(shipped=True)) and d["oov"] == d["failed"] == []
    for m, layer, cs in d["rows"]:
        top = encs[m].word_vectors(sents, "苹果")[:, -1, :]
        assert layer == encs[m].layer_names[-1]
        assert cs == pytest.approx([cosine(top[0], top[1]), cosine(top[0], top[2])], abs=1e-6)
    facts = lesson_facts.facts(_step("cosine", word="苹果", sentences=sents), d)
    assert set(facts) == set(lesson_facts.names("cosine", {"sentences": sents}))
    for m, _, cs in d["rows"]:
        assert (facts[f"{m}_2"], facts[f"{m}_3"]) == (f"{cs[0]:.2f}", f"{cs[1]:.2f}")


def test_a_model_that_fails_to_load_leaves_the_others_with_its_reason():
    encs = fakes()

    def load(name):
        if name == "word2vec":
            raise FileNotFoundError("no word2vec here")
        return encs[name]

    d = lesson_compute.compute(_step("cosine", word="苹果", sentences=["苹果很好吃", "我吃苹果"]), load)
    assert d["failed"] == [("word2vec", "no word2vec here")]
    assert [m for m, _, _ in d["rows"]] == ["elmo", "bert", "gpt"]


# -- unseen_word: word2vec's OutOfVocabulary, ELMo's vector from characters and its nearest words ----------------
class _Elmo(FakeEncoder):
    def __init__(self, known=()):
        super().__init__("elmo", 3, vocab=[*"苹果 手机 好吃 水果 公司 电脑 活动 学校 参加 运动".split(), "元宇宙"])
        self._known = set(known)

    def known(self, word):
        return word in self._known


def test_unseen_word_shows_the_oov_error_elmos_vector_and_its_nearest_words():
    w2v, elmo = fakes()["word2vec"], _Elmo()
    load = {"word2vec": w2v, "elmo": elmo}.__getitem__
    d = lesson_compute.compute(_step("unseen_word", word="元宇宙", sentence="很多公司都在谈论元宇宙"), load)
    assert not d["w2v_known"] and d["w2v_error"] == str(OutOfVocabulary("元宇宙", "word2vec"))
    assert "元宇宙" in d["w2v_error"] and "word2vec" in d["w2v_error"]
    assert d["elmo_known"] is False and d["layer_names"] == elmo.layer_names
    vecs = elmo.word_vectors(["很多公司都在谈论元宇宙"], "元宇宙")[0]
    assert d["dim"] == 16 and d["vector"] == pytest.approx(vecs[0][:8].tolist())  # the first 8 of 16 values
    assert d["norms"] == pytest.approx([float(np.linalg.norm(v)) for v in vecs], rel=1e-5)
    assert len(d["nearest"]) == 3  # a table row per layer
    for j, row in enumerate(d["nearest"]):
        assert row == elmo.nearest_words(vecs[j], j, topn=6, exclude=("元宇宙",))
        assert len(row) == 6 and "元宇宙" not in [w for w, _ in row]
    assert d["nearest"][0] != d["nearest"][2]  # each layer's own neighbours
    f = lesson_facts.facts(_step("unseen_word", word="元宇宙", sentence="很多公司都在谈论元宇宙"), d)
    assert set(f) == set(lesson_facts.names("unseen_word", {}))
    assert (f["word"], f["w2v"], f["elmo_vocab"], f["dim"]) == (
        "元宇宙",
        lesson_facts.WORDS["oov"],
        lesson_facts.WORDS["elmo_oov"],
        "16",
    )
    (w0, c0), (w2, c2) = d["nearest"][0][0], d["nearest"][-1][0]
    assert (f["token_near"], f["token_cos"], f["top_near"], f["top_cos"]) == (w0, f"{c0:.2f}", w2, f"{c2:.2f}")


def test_unseen_word_that_both_models_know():
    load = {"word2vec": fakes()["word2vec"], "elmo": _Elmo(known={"苹果"})}.__getitem__
    d = lesson_compute.compute(_step("unseen_word", word="苹果", sentence="我吃苹果"), load)
    assert d["w2v_known"] and d["w2v_error"] is None and d["elmo_known"] is True
    f = lesson_facts.facts(_step("unseen_word", word="苹果", sentence="我吃苹果"), d)
    assert (f["w2v"], f["elmo_vocab"]) == (lesson_facts.WORDS["known"], lesson_facts.WORDS["elmo_known"])
    no_near = {**d, "nearest": [[], []]}
    f = lesson_facts.facts(_step("unseen_word", word="苹果", sentence="我吃苹果"), no_near)
    assert [f[k] for k in ("token_near", "token_cos", "top_near", "top_cos")] == [lesson_facts.MISSING] * 4


# -- the 80/10/10 example: the first clean pair BERT's NSP head gets right -------------------------------------------
PARAGRAPHS = [
    Paragraph("reviews", i, list(t))
    for i, t in enumerate(
        [
            "今天天气很好，我们去公园散步吧。路上的行人都很高兴。孩子们在草地上玩耍。",
            "这家酒店的服务很好，房间也很干净。早餐种类很多。价格也比较合理。",
            "电脑的屏幕很清楚，电池也很耐用。就是有点重。朋友们都说不错。",
            "经济发展很快，人民生活水平不断提高。城市变化很大。大家都很满意。",
            "这本书写得很好，故事情节很感人。我一口气读完了。推荐大家看看。",
        ]
    )
]


class _NspHead:
    """BERT's stand-in for the 80/10/10 step: its tokenizer and a fixed P(IsNext)."""

    def __init__(self, p, max_len=128):
        self.tokenizer = CharTokenizer.build(PARAGRAPHS, min_count=1)
        self.max_len, self.p, self.calls = max_len, p, []

    def next_sentence(self, a, b):
        self.calls.append((a, b))
        return self.p


def _shown(d: dict) -> dict:
    """What the page shows of clean_example's result: the pair, its label, its tokens after masking, P and seed."""
    ex = d["example"]
    return {
        "pair": (ex["a_text"], ex["b_text"], bool(ex["is_next"])),
        "tokens": list(ex["tokens"]),
        "masked": [(m["index"], m["kind"]) for m in ex["masked"]],
        **{k: v for k, v in d.items() if k != "example"},
    }


def _first(enc, seed0, want_next, max_len=64):
    for seed in range(seed0, seed0 + lesson_compute.EXAMPLE_SEARCH + 1):
        ex = make_example(seed, enc.tokenizer, PARAGRAPHS, max_len=max_len)
        if lesson_compute.clean_pair(ex["a_text"], ex["b_text"]) and ex["is_next"] == want_next:
            return seed, ex
    raise AssertionError("no clean example")


@pytest.mark.parametrize("p, want_next", [(0.5, True), (0.25, False)])
def test_the_example_is_the_first_clean_pair_classified_right(p, want_next):
    enc = _NspHead(p)
    seed, ex = _first(enc, 7, want_next)  # not the first from seed 0
    assert seed > 7 and _first(enc, 0, want_next)[0] < 7
    d = lesson_compute.compute(_step("mlm_example", seed=7), {"bert": enc}.__getitem__, lambda: PARAGRAPHS)
    assert _shown(d) == _shown({"example": ex, "p_next": p, "seed": seed, "found": True})
    assert enc.calls[-1] == (ex["a_text"], ex["b_text"])
    f = lesson_facts.facts(_step("mlm_example", seed=7), d)
    assert set(f) == set(lesson_facts.names("mlm_example", {}))
    kinds_ = [m["kind"] for m in ex["masked"]]
    assert (f["seed"], f["chosen"], f["n_mask"], f["n_random"], f["n_kept"]) == (
        str(seed),
        str(len(kinds_)),
        str(kinds_.count("mask")),
        str(kinds_.count("random")),
        str(kinds_.count("kept")),
    )
    assert (f["label"], f["p_next"], f["verdict"]) == (
        "IsNext" if want_next else "NotNext",
        f"{p:.2f}",
        lesson_facts.WORDS["right"],
    )


def test_the_default_seed_is_0_and_the_example_fits_a_short_model():
    short = [  # one clause per sentence: seed 0's pair is already clean
        Paragraph("reviews", i, list(t))
        for i, t in enumerate(
            ["今天天气很好我们去公园。路上的行人都很高兴啊。", "这家酒店的服务很好房间。早餐种类很多价格合理。"]
        )
    ]
    enc = _NspHead(0.5, max_len=40)
    ex = make_example(0, enc.tokenizer, short, max_len=40)
    assert ex["is_next"] and lesson_compute.clean_pair(ex["a_text"], ex["b_text"])
    d = lesson_compute.compute(_step("mlm_example"), {"bert": enc}.__getitem__, lambda: short)
    assert _shown(d) == _shown({"example": ex, "p_next": 0.5, "seed": 0, "found": True}) and len(ex["ids"]) <= 40


def test_no_clean_pair_found_gives_the_first_seeds_example_marked_so():
    enc = _NspHead(0.75)
    latin = [Paragraph("reviews", i, list(f"abc{i}，我们去公园散步吧。路上的行人都很高兴。")) for i in range(3)]
    d = lesson_compute.clean_example(enc, latin, seed0=7, search=5)
    ex = make_example(7, enc.tokenizer, latin, max_len=64)
    assert _shown(d) == _shown({"example": ex, "p_next": 0.75, "seed": 7, "found": False})
    assert enc.calls == [(ex["a_text"], ex["b_text"])]  # only the example shown is classified
    f = lesson_facts.facts(_step("mlm_example", seed=7), d)
    assert f["verdict"] == lesson_facts.WORDS["right" if ex["is_next"] else "wrong"]


def test_the_search_tries_exactly_search_more_seeds():
    enc = _NspHead(0.5)  # the first clean IsNext pair from seed 0 is seed 5's
    assert _first(enc, 0, True)[0] == 5
    assert lesson_compute.clean_example(enc, PARAGRAPHS, seed0=0, search=5)["seed"] == 5
    miss = lesson_compute.clean_example(enc, PARAGRAPHS, seed0=0, search=4)
    assert (miss["found"], miss["seed"]) == (False, 0)


def test_a_long_paragraphs_example_is_cut_at_64_tokens():
    long = [Paragraph("reviews", p.doc_id, p.words * 3) for p in PARAGRAPHS]
    enc = _NspHead(0.5)
    d = lesson_compute.clean_example(enc, long, seed0=0, search=20)
    ex = make_example(d["seed"], enc.tokenizer, long, max_len=64)
    assert _shown(d) == _shown({**d, "example": ex}) and len(ex["ids"]) <= 64
    latin = [Paragraph("reviews", p.doc_id, list(f"abc{p.doc_id}，") + p.words * 4) for p in PARAGRAPHS]
    d = lesson_compute.clean_example(enc, latin, seed0=0, search=3)  # none clean: seed 0's example, cut at 64
    assert not d["found"] and len(d["example"]["ids"]) == 64
    assert _shown(d) == _shown({**d, "example": make_example(0, enc.tokenizer, latin, max_len=64)})


def test_clean_pair_needs_eight_chinese_characters_each():
    assert lesson_compute.clean_pair("一二三四五六七八。", "一二三四五六七八。")
    assert not lesson_compute.clean_pair("一二三四五六七。", "一二三四五六七八。")


# -- positions: a repeated character's two layer-0 vectors, on tiny BERTs ------------------------------------------
def _tiny(positions):
    torch.manual_seed(0)
    tok = CharTokenizer.build(PARAGRAPHS, min_count=1)
    cfg = BertConfig(vocab_size=len(tok), hidden=16, layers=1, heads=2, ffn=32, max_len=64, positions=positions)
    return BertEncoder("tiny", {}, {}, None, BertModel(cfg), tok)


def test_positions_measures_the_models_own_scheme():
    load = {"bert": _tiny("rope"), "gpt": _tiny("absolute")}.__getitem__
    d = lesson_compute.compute(_step("positions", text="今天很好，今天"), load)  # no model named: BERT
    assert d["model"] == "bert" and d["scheme"] == "rope" and d["char"] == "今" and d["layer0_max_diff"] == 0
    g = lesson_compute.compute(_step("positions", text="今天很好，今天", model="gpt"), load)
    assert g["model"] == "gpt" and g["scheme"] == "absolute" and g["layer0_max_diff"] > 0


def test_a_schematic_step_computes_nothing():
    assert lesson_compute.compute(_step("cove"), fakes().__getitem__) == {}
    assert json.dumps(lesson_facts.facts(_step("cove"), {})) == "{}"


def test_fill_mask_on_a_tiny_bert_ranks_the_answer_in_the_whole_vocabulary():
    bert = _tiny("rope")
    d = lesson_compute.compute(_step("fill_mask", text="今天天气很[MASK]。", answer="好"), {"bert": bert}.__getitem__)
    full = bert.fill_mask("今天天气很[MASK]。", topk=len(bert.tokenizer))[0]["candidates"]
    assert d["masks"][0]["candidates"] == full[: lesson.TOPK]
    rank = [c for c, _ in full].index("好") + 1
    assert d["answer"] == [{"char": "好", "rank": rank, "prob": full[rank - 1][1]}]
