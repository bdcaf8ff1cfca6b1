"""The pre-training page's views, tested without streamlit."""

import pytest

from ctxlib.viz import pretraining as va


def test_mask_at_end():
    assert va.mask_at_end("我今天很高[MASK]") and va.mask_at_end("我今天很高[MASK]  ")
    assert not va.mask_at_end("我今天很高[MASK]。") and not va.mask_at_end("[MASK]天很好") and not va.mask_at_end("")


def test_mask_text_characters_and_whole_words():
    text = "今天天气很好"
    masked, pairs = va.mask_text(text, [3])
    assert masked == "今天天[MASK]很好" and pairs == [(3, "气")]
    masked, pairs = va.mask_text("我们去公园散步吧", [4], whole_word=True)  # jieba: 我们 / 去 / 公园 / 散步 / 吧
    assert masked == "我们去[MASK][MASK]散步吧" and [o for _, o in pairs] == ["公", "园"]
    assert va.mask_text(text, [])[0] == text
    assert va.mask_text("a<script>b", [1])[0] == "a[MASK]script>b"


def test_example_html_and_counts():
    ex = {
        "tokens": ["[CLS]", "[MASK]", "<", "好", "[SEP]", "天", "[SEP]"],
        "original_tokens": ["[CLS]", "很", "<", "人", "[SEP]", "天", "[SEP]"],
        "segment_ids": [0, 0, 0, 0, 0, 1, 1],
        "masked": [
            {"index": 1, "original": "很", "replacement": "[MASK]", "kind": "mask"},
            {"index": 3, "original": "人", "replacement": "好", "kind": "random"},
            {"index": 5, "original": "天", "replacement": "天", "kind": "kept"},
        ],
    }
    h = va.example_html(ex, ("→ [MASK] 80%", "→ 随机字 10%", "<不变> 10%"))
    assert "&lt;" in h and "<script" not in h
    assert h.count(va.KIND_COLORS["random"]) >= 2
    assert "→ 随机字 10%" in h and "&lt;不变&gt; 10%" in h  # the page's labels, escaped
    assert "→ random 10%" in va.example_html(ex)  # English by default
    assert va.example_counts(ex) == {"candidates": 4, "chosen": 3, "mask": 1, "random": 1, "kept": 1}
    labels = {k: k.upper() for k in va.EXAMPLE_LABELS}
    assert va.example_metrics(ex, labels) == [("CHOSEN", "3 / 4 (75%)"), ("→ [MASK]", 1), ("RANDOM", 1), ("KEPT", 1)]
    assert va.example_rows(ex, labels) == [
        {"POSITION": 1, "ORIGINAL": "很", "BECAME": "[MASK]", "KIND": "[MASK]"},
        {"POSITION": 3, "ORIGINAL": "人", "BECAME": "好", "KIND": "KIND_RANDOM"},
        {"POSITION": 5, "ORIGINAL": "天", "BECAME": "天", "KIND": "KIND_KEPT"},
    ]
    assert va.chosen_share({"chosen": 0, "candidates": 0}) == "0 / 0 (0%)"


def test_page_inputs():
    text, toks, cut = va.clip_text("今天天气很好", 4)
    assert (text, len(toks), cut) == ("今天天气", 4, True)
    assert va.clip_text("今天天气很好", 6)[2] is False
    text, toks, cut = va.clip_text("今天天气很[MASK]好", 3)  # a text with [MASK] keeps its characters
    assert text == "今天天气很[MASK]好" and len(toks) == 3 and cut
    assert va.parse_indices("3, 5,x,-1,") == [3, 5]
    assert va.masked_input("今天很[MASK]", [0]) == ("今天很[MASK]", [None])
    assert va.masked_input("今天很好", [3]) == ("今天很[MASK]", ["好"])
    assert va.mask_span("他在银行存钱", (2, 4)) == ("他在[MASK][MASK]存钱", ["银", "行"])
    assert va.parse_seed(" 7 ") == 7 and va.parse_seed("x") == 0
    assert va.next_seed("7") == "8" and va.next_seed("x") == "0"


def test_fill_mask_figure_marks_original():
    res = [{"index": 1, "char_offset": 0, "candidates": [("好", 0.6), ("坏", 0.3)]}]
    fig = va.fill_mask_figure(res, ["好"])
    assert list(fig.data[0].marker.color) == ["#1f77b4", "#d62728"]  # reversed order: 坏, 好


def test_one_position_four_ways_and_missing_models():
    from ctxlib.viz import pretraining as vp

    calls = []

    def ask(model, method, *args, **kw):
        calls.append((model, method, args))
        if method == "lm_topk":
            return {"forward": [("<S>", 0.5), ("存", 0.3), ("取", 0.1)], "backward": [("存", 0.6), ("</S>", 0.2)]}
        if method == "next_char":
            return [("存", 0.4), ("取", 0.2)]
        if method == "char_rank":
            return {"token": args[1], "rank": 1, "prob": 0.4}
        return [{"candidates": [("存", 0.7), ("放", 0.1)]}]

    titles = {k: k + ":{context}" for k in vp.POSITION_TITLES}
    text = "他在银行存了一笔钱。"
    words, spans = vp.word_spans(text)
    pos = words.index("存")
    have = {"elmo": True, "gpt": True, "bert": True}
    panels, actual, punct = vp.one_position(text, words, spans, pos, 5, ask, have, titles, gpt_cap=3)
    assert [p[0].split(":")[0] for p in panels] == ["forward", "backward", "gpt", "bert"]
    assert panels[0][1] == [("存", 0.3), ("取", 0.1)] and panels[1][1] == [("存", 0.6)]  # boundary symbols dropped
    assert ("gpt", "next_char", ("在银行",)) in calls  # the left context, cut to its last 3 characters
    assert ("bert", "fill_mask", ("他在银行[MASK]了一笔钱。",)) in calls
    assert actual == ["存", "存", "存", "存"] and panels[3][0] == "bert:他在银行＿了一笔钱…"
    panels, actual, punct = vp.one_position(text, words, spans, 0, 5, ask, {"gpt": True, "bert": True}, titles)
    assert punct == {}
    assert [p[0] for p in panels][0] == "gpt_none:∅" and panels[0][1] == [] and len(panels) == 2  # nothing to the left
    fig = vp.one_position_figure(panels, actual)
    assert len(fig.data) == 2
    assert vp.tail_tokens("abc 今天天气", 2) == "天气" and vp.tail_tokens("今天", 5) == "今天"
    assert vp.tail_tokens("今天 hello", 2) == "天 hello"  # an ASCII run is one token


def test_rank_in_the_full_distribution():
    import numpy as np
    import torch

    from ctxlib.encoder import rank_in

    p = np.array([0.1, 0.4, 0.1, 0.3, 0.05, 0.05])
    assert [rank_in(p, i)[0] for i in range(6)] == [3, 1, 3, 2, 5, 5]  # ties share the better rank
    assert rank_in(torch.tensor(p), 3) == (2, pytest.approx(0.3))
    with pytest.raises(ValueError):
        rank_in(p, 6)


def test_true_token_outside_the_top_k_gets_its_own_bar():
    from ctxlib.viz.common import percent, with_true_bar

    items = [("装", 0.2), ("换", 0.1)]
    assert with_true_bar(items, {"token": "换", "rank": 2, "prob": 0.1}) == (items, "换")
    bars, red = with_true_bar(items, {"token": "存", "rank": 282, "prob": 0.000254}, "{token} (rank {rank})")
    assert bars[-1] == ("存 (rank 282)", 0.000254) and red == "存 (rank 282)"
    bars, red = with_true_bar(items, {"token": "龘", "rank": None, "prob": None}, unknown_fmt="{token} ?")
    assert bars[-1] == ("龘 ?", 0.0) and red == "龘 ?"
    assert with_true_bar(items, {"token": "存", "rank": 1}) == (items, None)  # no probability known: nothing drawn
    assert percent(0.000254) == "0.025%" and percent(0.2) == "20.0%" and percent(0.0) == "0.0%"
    res = [{"candidates": items, "original": {"token": "存", "rank": 282, "prob": 0.000254}}]
    fig = va.fill_mask_figure(res, ["存"], rank_fmt="{token} #{rank}")
    assert list(fig.data[0].y)[0].startswith("存 #282") and list(fig.data[0].marker.color)[0] == "#d62728"


def test_one_position_ranks_and_words_only():
    from ctxlib.viz import pretraining as vp

    def ask(model, method, *args, **kw):
        if method == "lm_topk":
            return {
                "forward": [("，", 0.43), ("电脑", 0.2), ("手机", 0.1)],
                "backward": [("。", 0.5), ("书", 0.2)],
                "actual": {"word": "电脑", "forward": 0.2, "backward": 0.01, "rank": {"forward": 3, "backward": 40}},
                "punct": {"forward": 0.45, "backward": 0.6},
            }
        if method == "char_rank":
            return {"token": args[1], "rank": 17, "prob": 0.002}
        if method == "next_char":
            return [("手", 0.3)]
        return [{"candidates": [("手", 0.5)], "original": {"token": kw["originals"][0], "rank": 9, "prob": 0.01}}]

    titles = {k: k + ":{context}" for k in vp.POSITION_TITLES if k not in ("rank", "unknown")}
    text = "我昨天买了一台电脑"
    words, spans = vp.word_spans(text)
    pos = words.index("电脑")
    have = {"elmo": True, "gpt": True, "bert": True}
    panels, actual, punct = vp.one_position(text, words, spans, pos, 5, ask, have, titles, words_only=True)
    assert panels[0][1] == [("电脑", 0.2), ("手机", 0.1)] and actual[0] == "电脑"  # "，" hidden, 电脑 among them
    assert panels[1][1] == [("书", 0.2), ("电脑 #40", 0.01)] and actual[1] == "电脑 #40"
    assert actual[2] == "电 #17" and actual[3] == "电 #9" and punct == {"forward": 0.45, "backward": 0.6}
    panels, actual, _ = vp.one_position(text, words, spans, pos, 5, ask, have, titles, words_only=False)
    assert panels[0][1][0] == ("，", 0.43)  # the true distribution, punctuation included
