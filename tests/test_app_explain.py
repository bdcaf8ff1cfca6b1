"""ctxlib.app.explain without a page: library errors mapped to catalogue messages, the tag legend's names."""

import pytest

from ctxlib.app import explain
from ctxlib.app.i18n import catalogue
from ctxlib.encoder import OutOfVocabulary, WordNotFound


@pytest.fixture
def ids(monkeypatch):
    monkeypatch.setattr(explain, "msg", lambda msg_id, **kw: (msg_id, kw))


def test_library_errors_map_to_the_catalogue(ids):
    assert explain.error_text(ValueError("the text is 300 tokens long; fill-mask takes at most 126")) == (
        "errors.too_long",
        {"n": "300", "cap": "126"},
    )
    assert explain.error_text(ValueError("the text has no [MASK]; write e.g. 今天天气很[MASK]"))[0] == "errors.no_mask"
    assert explain.error_text(WordNotFound("苹果", 2, "香蕉很好吃")) == (
        "errors.word_not_found",
        {"word": "苹果", "n": 3},
    )
    assert explain.error_text(OutOfVocabulary("元宇宙", "word2vec"))[0] == "errors.oov"
    kind, kw = explain.error_text(RuntimeError("CUDA out of memory"))
    assert kind == "errors.other" and kw == {"kind": "RuntimeError", "error": "CUDA out of memory"}


def test_error_messages_and_tags_in_both_languages():
    for code in ("zh", "en"):
        cat = catalogue(code)
        for _, msg_id in explain._LIBRARY_ERRORS:
            assert msg_id in cat
        assert all(f"atlas.tags.{t}" in cat for t in ("n", "v", "vn", "u", "d", "nr", "ns", "nt", "w"))
    assert catalogue("zh")["atlas.tags.vn"].startswith("名动词") and catalogue("en")["atlas.tags.u"].startswith(
        "particle"
    )


def test_the_browser_checks_allowlist():
    """tests/zh_text.py (the zh browser test's filter): English UI words are caught; model names, formulae, tag codes,
    icon ligatures and file paths are not."""
    from zh_text import english_words

    assert english_words("头 1 · 从 ↓ 到 →") == [] and english_words("head 1, from ↓ to →") == ["head", "from", "to"]
    assert english_words("majority 0.50 · accuracy") == ["majority", "accuracy"]
    assert (
        english_words("elmobiLSTM 第 1 层 · BERT · word2vec · softmax(s)_j · vn · t-SNE · [MASK] · P(IsNext | A, B)")
        == []
    )
    assert english_words("keyboard_arrow_down 训练记录来自 checkpoints/<模型>/config.json") == []
    assert english_words("previous char · broad") == ["previous", "broad"]  # "char" alone is allowed (char-CNN)
