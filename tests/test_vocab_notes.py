"""The unseen-word notes (ctxlib/app/vocab_notes.py) asserted by what they say: the line under the per-model notes
names exactly the models that read characters and saw every character of the word (BERT, GPT), never word2vec or
the word-level ELMo, and it appears only when some model has not seen the word."""

import app_fakes
import pytest
from test_app_type_token import _run, _texts


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")
    return app_fakes.install(monkeypatch)


def _known_chars_line(at) -> list[str]:
    return [c.value.replace("\\", "") for c in at.caption if "character by character" in c.value]


def _set_word(at, word, texts):
    at.text_input(key="tt_word").set_value(word)
    at.text_area(key="tt_text").set_value("\n".join(texts)).run()
    assert not at.exception and not at.error


def test_unseen_word_note_names_the_character_models_only():
    """元宇宙: not in word2vec's or the (word-level) ELMo's vocabulary; BERT and GPT saw each of its characters."""
    at = _run(lang="en")
    _set_word(at, "元宇宙", ["元宇宙很火 | a", "大家都在谈元宇宙 | a", "元宇宙公司上市了 | b", "新的元宇宙 | b"])
    assert _known_chars_line(at) == [
        "bert, gpt: read '元宇宙' character by character; each of its characters was seen in training."
    ]
    assert "word2vec: '元宇宙' is not in the vocabulary" in _texts(at, "warning").replace("\\", "")


def test_no_character_model_line_when_a_character_is_unk():
    """龘靐: BERT and GPT never saw these characters ([UNK]): no model read it whole, so no line names any."""
    at = _run(lang="en")
    _set_word(at, "龘靐", ["龘靐真好吃 | a", "我爱龘靐 | a", "龘靐手机 | b", "新的龘靐 | b"])
    assert _known_chars_line(at) == []


def test_no_note_when_every_model_knows_the_word():
    at = _run(lang="en")
    assert _known_chars_line(at) == [] and "vocabulary" not in _texts(at, "warning")


def test_the_note_in_chinese_names_the_same_models(monkeypatch):
    from ctxlib.app import i18n

    at = _run(lang="zh")
    _set_word(at, "元宇宙", ["元宇宙很火 | a", "大家都在谈元宇宙 | a", "元宇宙公司上市了 | b", "新的元宇宙 | b"])
    want = i18n.lookup("triple.unseen.known_chars", "zh", models="bert, gpt", word="元宇宙")
    assert [c.value.replace("\\", "") for c in at.caption if c.value.replace("\\", "") == want] == [want]


def _scale_of(X):
    """(mean, 95th percentile, typical nearest cos) of vocabulary rows X, as ctxlib.triple computes them."""
    from ctxlib import triple
    from ctxlib.vecmath import unit_rows

    U = unit_rows(X)
    return (*triple.random_pair_cosines(U), triple.nearest_top1(U))


def test_nearest_scale_of_an_elmo_half_is_read_on_that_half(fakes):
    """Type vs token with ?half=forward: the scale under ELMo's nearest words is the forward half's, not the whole
    layer's (the two differ, so a table built on the wrong vectors would show other numbers)."""
    from ctxlib.app import vocab_notes

    _, M = fakes["elmo"].type_matrix(3000)
    d = M.shape[-1] // 2
    fwd = vocab_notes.nearest_scale("elmo", 2, "s", "forward")
    assert fwd == pytest.approx(_scale_of(M[:, 2, :d]))
    assert vocab_notes.nearest_scale("elmo", 2, "s", "backward") == pytest.approx(_scale_of(M[:, 2, d:]))
    assert fwd != pytest.approx(_scale_of(M[:, 2]))


def test_nearest_scale_follows_a_retrained_model(fakes, monkeypatch):
    """A model replaced in the same session (a new stamp): its nearest-word scale is the new model's, not the cached
    vocabulary of the old one."""
    import app_fakes

    from ctxlib.app import loaders, vocab_notes

    old = vocab_notes.nearest_scale("bert", 1, "stamp-1")
    new_enc = app_fakes.FakeEncoder("bert", 4, chars=True, vocab=list(reversed(app_fakes.VOCAB))[:12])
    monkeypatch.setattr(loaders, "load_encoder", lambda name: new_enc)
    _, M = new_enc.type_matrix(3000)
    new = vocab_notes.nearest_scale("bert", 1, "stamp-2")
    assert new == pytest.approx(_scale_of(M[:, 1])) and new != pytest.approx(old)
