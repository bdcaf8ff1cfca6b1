from ctxlib.tokens import char_tokens, find_all, norm_token, segment, tokens_in_span


def _check_spans(text, toks):
    last = 0
    for w, a, b in toks:
        assert text[a:b] == w and a >= last
        last = b


def test_target_span_is_kept_inside_a_longer_word():
    text = "我家门前有一棵苹果树，苹果树上结满了苹果。"
    toks = segment(text, "苹果")
    _check_spans(text, toks)
    apples = [(a, b) for w, a, b in toks if w == "苹果"]
    assert apples == find_all(text, "苹果") and len(apples) == 3


def test_segment_without_target_and_whitespace_dropped():
    text = "  苹果手机 很好用\t!"
    toks = segment(text)
    _check_spans(text, toks)
    assert all(w.strip() for w, _, _ in toks)
    assert "".join(w for w, _, _ in toks) == "苹果手机很好用!"


def test_spans_index_the_original_text_with_full_width_characters():
    text = "１２月，ｉＰｈｏｎｅ苹果手机"
    toks = segment(text, "苹果")
    _check_spans(text, toks)
    assert any(w == "苹果" for w, _, _ in toks)
    assert find_all("ＡＢ苹果", "苹果") == [(2, 4)]
    assert find_all("１２月", "12月") == [(0, 3)]  # NFKC-insensitive matching


def test_find_all_is_non_overlapping():
    assert find_all("哈哈哈哈", "哈哈") == [(0, 2), (2, 4)]
    assert find_all("abc", "") == [] and find_all("abc", "x") == []


def test_char_tokens():
    toks = char_tokens("iPhone 12手机！")
    assert [t for t, _, _ in toks] == ["iPhone", "12", "手", "机", "！"]
    _check_spans("iPhone 12手机！", toks)


def test_norm_token_and_tokens_in_span():
    assert norm_token("ＡＢＣ") == "abc"
    toks = [("苹果", 0, 2), ("手机", 2, 4)]
    assert tokens_in_span(toks, 1, 3) == [0, 1] and tokens_in_span(toks, 2, 4) == [1]
