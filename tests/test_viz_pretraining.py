"""The pre-training page's views, tested without streamlit."""

from ctxlib.viz import pretraining as va


def test_mask_text_characters_and_whole_words():
    text = "今天天气很好"
    masked, pairs = va.mask_text(text, [3])
    assert masked == "今天天[MASK]很好" and pairs == [(3, "气")]
    masked, pairs = va.mask_text("我们去公园散步吧", [4], whole_word=True)  # jieba: 我们 / 去 / 公园 / 散步 / 吧
    assert masked == "我们去[MASK][MASK]散步吧" and [o for _, o in pairs] == ["公", "园"]
    assert va.mask_text(text, [])[0] == text
    assert va.mask_text("a<script>b", [1])[0] == "a[MASK]script>b"


def test_example_html_and_counts():
    ex = {"tokens": ["[CLS]", "[MASK]", "<", "好", "[SEP]", "天", "[SEP]"],
          "original_tokens": ["[CLS]", "很", "<", "人", "[SEP]", "天", "[SEP]"],
          "segment_ids": [0, 0, 0, 0, 0, 1, 1],
          "masked": [{"index": 1, "original": "很", "replacement": "[MASK]", "kind": "mask"},
                     {"index": 3, "original": "人", "replacement": "好", "kind": "random"},
                     {"index": 5, "original": "天", "replacement": "天", "kind": "kept"}]}
    h = va.example_html(ex, "zh")
    assert "&lt;" in h and "<script" not in h
    assert h.count(va.KIND_COLORS["random"]) >= 2
    assert va.example_counts(ex) == {"candidates": 4, "chosen": 3, "mask": 1, "random": 1, "kept": 1}


def test_fill_mask_figure_marks_original():
    res = [{"index": 1, "char_offset": 0, "candidates": [("好", 0.6), ("坏", 0.3)]}]
    fig = va.fill_mask_figure(res, ["好"])
    assert list(fig.data[0].marker.color) == ["#1f77b4", "#d62728"]  # reversed order: 坏, 好
