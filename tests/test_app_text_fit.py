"""AppTests of what keeps free text classroom-fit: the GPT page's repetition controls, names switch (on by default in
presentation mode) and training note; the fill-mask note; the nearest-word frequency floor with counts (Type vs token,
ELMo layers)."""

import re

import pytest
from app_fakes import install
from app_pages import PAGES, run_page, shipped
from streamlit.testing.v1 import AppTest

GPT = ("6_GPT_writing.py", "GPT writing: one character at a time")


def _infos(at) -> str:
    return " ".join(i.value for i in at.info)


def test_gpt_page_defaults_note_and_url_settings(monkeypatch):
    encs = install(monkeypatch)
    at = run_page(*GPT, prompt="这家酒店的服务", n="5")
    note = _infos(at)
    assert "People's Daily news from January 1998 + product and hotel reviews" in note and "4 layers" in note
    s = encs["gpt"].last_settings
    assert s["repetition_penalty"] == 1.3 and s["no_repeat_ngram"] == 3 and s["banned_names"] is None
    assert at.checkbox(key="gw_names").value is False and at.slider(key="gw_rp").value == pytest.approx(1.3)
    at = run_page(*GPT, prompt="今天天气", n="5", rp="1", ng="0")  # the old sampling, from a link
    s = encs["gpt"].last_settings
    assert s["repetition_penalty"] == 1.0 and s["no_repeat_ngram"] == 0
    assert at.query_params["rp"] in ("1", ["1"]) and at.query_params["ng"] in ("0", ["0"])
    at = run_page(*GPT, prompt="今天天气", n="5", rp="x", ng="99")  # bad values: the defaults, no crash
    assert encs["gpt"].last_settings["repetition_penalty"] == 1.3 and encs["gpt"].last_settings["no_repeat_ngram"] == 3


def test_gpt_page_names_are_left_out_by_default_in_presentation_mode(monkeypatch):
    encs = install(monkeypatch)
    at = run_page(*GPT, prompt="国务院总理", n="5", present="1")
    assert at.checkbox(key="gw_names").value is True
    banned = encs["gpt"].last_settings["banned_names"]
    assert banned and "李鹏" in banned and "记者" in banned  # the bylines a made-up name follows, too
    at.checkbox(key="gw_names").uncheck().run()  # the teacher can turn it off
    assert not at.exception and encs["gpt"].last_settings["banned_names"] is None


def test_gpt_page_note_in_chinese(monkeypatch):
    install(monkeypatch)
    at = AppTest.from_file(str(PAGES / GPT[0]), default_timeout=120)
    at.query_params.update({"lang": "zh", "prompt": "今天天气", "n": "3"})
    at.run()
    assert not at.exception and "1998 年 1 月的《人民日报》新闻" in _infos(at)


def _counts(cell: str) -> list[int]:
    return [int(c.replace(",", "")) for c in re.findall(r"\(([\d,]+)\)", cell)]


def test_type_token_nearest_words_floor_and_counts(monkeypatch):
    install(monkeypatch)
    at = run_page("1_Type_vs_token.py", "Type vs token: how many vectors does a word have?", near="1", floor="0")
    tables = [tb.value for tb in at.table if any(c.startswith("elmo (") for c in tb.value.columns)]
    col = [c for c in tables[0].columns if c.startswith("elmo")][0]
    cells = list(tables[0][col])
    assert all(_counts(c) for c in cells) and at.number_input(key="tt_floor").value == 0
    assert any(min(_counts(c)) < 1000 for c in cells)
    at.number_input(key="tt_floor").set_value(1000).run()
    tables = [tb.value for tb in at.table if any(c.startswith("elmo (") for c in tb.value.columns)]
    after = [n for c in tables[0][col] for n in _counts(c)]
    assert not at.exception and after and min(after) >= 1000 and at.query_params["floor"] in ("1000", ["1000"])
    assert any("fewer than 1000 times" in c.value for c in at.caption)


def test_elmo_nearest_words_per_layer_have_counts_above_the_floor():
    shipped("elmo")
    at = run_page("3_ELMo_layers.py", "ELMo: layers and task-specific mixing")
    at.toggle(key="elmo_nn").set_value(True).run()
    assert not at.exception and at.number_input(key="elmo_floor").value == 100
    rows = [tb.value for tb in at.table][0]
    counts = [n for cell in rows.iloc[:, 1] for n in _counts(cell)]
    assert len(counts) == 6 * len(rows) and min(counts) >= 100


def test_fill_mask_has_the_training_note():
    shipped("bert")
    at = run_page("5_BERT_pretraining.py", "BERT pre-training: masked LM and next-sentence prediction")
    note = _infos(at)
    assert "This bert model" in note and "million parameters" in note and "People's Daily" in note
