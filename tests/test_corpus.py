from collections import Counter

import pytest

from ctxlib import corpus, user_text
from ctxlib.corpus import CorpusError


def test_peoples_daily_has_gold_words_and_tags():
    pd = corpus.peoples_daily()
    assert len(pd) == 19484
    first = pd[0]
    assert first.words[:3] == ["迈向", "充满", "希望"] and first.tags[:3] == ["v", "v", "n"]
    assert all(len(p.words) == len(p.tags) and p.label is None for p in pd[:2000])
    n_words = sum(len(p.words) for p in pd)
    assert 1_050_000 < n_words < 1_200_000
    tags = Counter(t for p in pd[:3000] for t in p.tags)
    assert {"n", "v", "u", "w", "nr", "ns"} <= set(tags)
    assert all(t.isalpha() and w for p in pd[:3000] for w, t in zip(p.words, p.tags))  # 'word/TAG' split at the last /


def test_nfkc_normalises_full_width():
    assert corpus.nfkc("１２月") == "12月" and corpus.nfkc("ＡＢＣ") == "ABC"
    pd = corpus.peoples_daily()
    text = "".join(p.text for p in pd[:3000])
    assert "１" not in text and "１２月" not in text
    assert any("12月" in p.text for p in pd)


def test_sentences_split_on_sentence_final_punctuation():
    p = corpus.Paragraph("user", 0, ["我", "来", "了", "。", "你", "呢", "？", "好", "！", "没", "完"])
    assert p.sentences() == [(0, 4), (4, 7), (7, 9), (9, 11)]
    sents = corpus.sentences("pd", "valid")
    assert all(s for s in sents) and len(sents) > 4000


def test_split_is_deterministic_and_about_80_10_10():
    assert corpus.split_of("今天天气很好") == corpus.split_of("今天天气很好")
    pd = corpus.peoples_daily()
    c = Counter(p.split for p in pd)
    assert set(c) == {"train", "valid", "test"}
    assert 0.77 < c["train"] / len(pd) < 0.83 and 0.08 < c["valid"] / len(pd) < 0.12
    assert all(p.split == corpus.split_of(p.text) for p in pd[:500])
    train = {p.text for p in corpus.load("pd", "train")}
    test = {p.text for p in corpus.load("pd", "test")}
    assert not (train & test)
    with pytest.raises(ValueError):
        corpus.load("pd", "dev")
    with pytest.raises(ValueError):
        corpus.load("wiki")


def test_reviews_are_deduplicated_labelled_and_segmented():
    rv = corpus.reviews()
    texts = [p.text for p in rv]
    assert 15000 < len(rv) < 35123 / 2  # pos.txt + neg.txt hold 35,123 non-empty lines, about half duplicates
    assert len(set(texts)) > 0.999 * len(rv)  # distinct raw texts; a few differ only in whitespace jieba drops
    labels = Counter(p.label for p in rv)
    assert set(labels) == {0, 1} and min(labels.values()) > 5000
    assert all(p.tags is None and p.words and p.source == "reviews" for p in rv[:500])
    assert sum(len(p.words) for p in rv[:200]) > sum(len(p.text) for p in rv[:200]) / 3  # really segmented
    assert rv[0].words[:5] == ["我", "正在", "写", "这", "本书"] and rv[0].label == 1


def test_user_corpus_utf8_and_gb18030(tmp_path):
    text = "苹果手机很好用。\n我喜欢吃苹果\n\n１２月的苹果很甜\n"
    f8 = tmp_path / "u8.txt"
    f8.write_text(text, encoding="utf-8")
    fg = tmp_path / "gb.txt"
    fg.write_bytes(text.encode("gb18030"))
    a, b = user_text.user_corpus(f8), user_text.user_corpus(fg)
    assert [p.words for p in a] == [p.words for p in b]
    assert len(a) == 3 and a[2].text.startswith("12月") and "苹果" in a[1].words
    fb = tmp_path / "bom.txt"
    fb.write_bytes("\ufeff".encode("utf-8") + text.encode("utf-8"))
    assert user_text.read_text_file(fb) == text


@pytest.mark.parametrize(
    "data,msg",
    [
        (b"", "empty"),
        (b"  \n\n", "empty"),
        (b"\x00\x01PK\x03\x04" * 50, "binary"),
        (bytes(range(1, 32)) * 40, "binary"),
    ],
)
def test_user_corpus_bad_files(tmp_path, data, msg):
    f = tmp_path / "x.txt"
    f.write_bytes(data)
    with pytest.raises(CorpusError, match=msg):
        user_text.user_corpus(f)


def test_user_corpus_cap_and_missing(tmp_path):
    f = tmp_path / "big.txt"
    f.write_text("苹果很好吃。\n" * 1000, encoding="utf-8")
    with pytest.raises(CorpusError, match="cap"):
        user_text.read_text_file(f, cap=1000)
    with pytest.raises(CorpusError, match="not found"):
        user_text.read_text_file(tmp_path / "nope.txt")
    assert user_text.USER_FILE_CAP == 20 * 1024 * 1024


def test_occurrences_give_spans_and_gold_tags():
    occ, total = corpus.occurrences("发展", source="pd", cap=50)
    assert total > 500 and len(occ) == 50
    assert all(o.text[o.start : o.end] == "发展" and o.tag in {"v", "vn", "n", "a", "an"} for o in occ)
    assert {"v", "vn"} <= {o.tag for o in corpus.occurrences("发展", source="pd", cap=10**6)[0]}
