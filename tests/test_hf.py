"""HfEncoder (ctxlib.models.hf) on tiny random Transformers models built offline (tests/hf_tiny.py): spans and pooling,
shapes, agreement with the model's own outputs, fill-mask, next-sentence, generation, and every bad input as one
clean HfModelError."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import hf_tiny
import numpy as np
import pytest
import torch

from ctxlib import lexicon, writing
from ctxlib.checkpoint import CheckpointError
from ctxlib.models import gpt as gpt_model
from ctxlib.models import hf
from ctxlib.models.hf import HfModelError


@pytest.fixture(scope="session")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {
        "zh": hf_tiny.zh_bert(root / "zh"),
        "zh_nsp": hf_tiny.zh_bert(root / "zh_nsp", nsp=True),
        "en": hf_tiny.en_bert(root / "en"),
        "gpt2": hf_tiny.gpt2(root / "gpt2"),
        "gpt2_untrimmed": hf_tiny.gpt2(root / "gpt2_untrimmed", trim_offsets=False),
    }


@pytest.fixture(scope="session")
def encs(folders):
    return {k: hf.load(str(v)) for k, v in folders.items()}


def _own_hidden(enc, text, **kw):
    """The transformers model's own hidden states for `text`, (L+1, T, D), computed without the encoder."""
    ids = enc.tokenizer(text, return_tensors="pt", **kw)
    with torch.no_grad():
        out = enc.model(**ids, output_hidden_states=True)
    return torch.stack(out.hidden_states, 0)[:, 0].numpy(), ids["input_ids"][0].tolist()


def test_attributes(encs, folders):
    zh, nsp, en, g = encs["zh"], encs["zh_nsp"], encs["en"], encs["gpt2"]
    assert (zh.family, zh.language, zh.has_nsp, zh.license) == ("masked", "zh", False, "apache-2.0")
    assert (nsp.family, nsp.has_nsp) == ("masked", True)
    assert (en.family, en.language, en.license) == ("masked", "en", None)
    assert (g.family, g.language, g.kind, g.word_level) == ("causal", "en", "hf", False)
    assert zh.layer_names == ["embeddings", "layer 1", "layer 2"] and zh.dim == 32 and zh.max_len == 64
    assert zh.n_params == sum(p.numel() for p in zh.model.parameters()) > 0
    assert zh.name == "zh" and zh.source == str(folders["zh"].resolve())
    info = g.info()
    for k in ("family", "language", "n_params", "license", "source", "layers", "dim"):
        assert k in info
    assert info["family"] == "causal" and len(info["layers"]) == 3


def test_chinese_spans_specials_and_shapes(encs):
    e = encs["zh"].encode(["我买了一个苹果手机。"])[0]
    assert e.tokens[0] == "[CLS]" and e.tokens[-1] == "[SEP]" and e.spans[0] == (0, 0) and e.spans[-1] == (10, 10)
    assert e.tokens[1:-1] == list("我买了一个苹果手机。")
    assert all(e.text[a:b] == t for t, (a, b) in zip(e.tokens[1:-1], e.spans[1:-1]))
    assert e.layers.shape == (3, 12, 32) and e.layers.dtype == np.float32
    assert e.attentions.shape == (2, 2, 12, 12)
    np.testing.assert_allclose(e.attentions.sum(-1), 1.0, atol=1e-5)
    assert e.word_indices("苹果") == [6, 7] and all(e.known) and not e.truncated
    assert encs["zh"].encode(["我买了"], attentions=False)[0].attentions is None


def test_hidden_states_equal_the_models_own(encs):
    for key, text in (("zh", "他在吃一个红苹果。"), ("en", "the riverbank is green"), ("gpt2", "the cat sat 苹果")):
        enc = encs[key]
        own, ids = _own_hidden(enc, text)
        e = enc.encode([text, text + " and a much longer second text in the same batch"])[0]  # padded in a batch
        assert len(e.tokens) == len(ids)
        np.testing.assert_allclose(e.layers, own, atol=1e-5)


def test_wordpiece_word_pools_its_pieces(encs):
    en = encs["en"]
    text = "the riverbank is green and we are playing"
    e = en.encode([text])[0]
    assert e.tokens[2:4] == ["river", "##bank"] and e.spans[2:4] == [(4, 9), (9, 13)]
    assert e.tokens[-3:-1] == ["play", "##ing"]
    own, _ = _own_hidden(en, text)
    np.testing.assert_allclose(en.word_vectors([text], "riverbank")[0], own[:, 2:4].mean(1), atol=1e-5)
    np.testing.assert_allclose(en.word_vectors([text], "playing")[0], own[:, -3:-1].mean(1), atol=1e-5)
    # pooling is by overlap: a part of the word pools the pieces it touches, never a neighbour
    assert en.word_vectors_with_tokens([text], "river")[1] == [["river"]]
    assert en.word_vectors_with_tokens([text], "verb")[1] == [["river", "##bank"]]
    assert en.word_vectors_with_tokens([text], "green")[1] == [["green"]]


@pytest.mark.parametrize("key", ["gpt2", "gpt2_untrimmed"])
def test_byte_level_pieces_with_a_leading_space(encs, key):
    g = encs[key]
    text = "the river bank"
    e = g.encode([text])[0]
    river = e.word_indices("river")
    assert [e.tokens[i] for i in river] == [" river"]  # decoded, leading space kept, the previous word not pooled
    assert e.word_indices("the") == [0]
    a, b = e.spans[river[0]]
    assert b == 9 and a in (3, 4)  # trimmed offsets start at the letter, untrimmed at the space
    own, _ = _own_hidden(g, text)
    np.testing.assert_allclose(g.word_vectors([text], "river")[0], own[:, river].mean(1), atol=1e-5)


def test_gpt2_causal_attention_and_multibyte_characters(encs):
    e = encs["gpt2"].encode(["我买了苹果手机"])[0]
    assert e.spans and all(a < b for a, b in e.spans)
    assert "".join(dict.fromkeys(e.tokens)).startswith("我买了")  # partial-byte pieces show their character
    idx = e.word_indices("苹果")
    assert idx and all(e.spans[i][0] < 5 and e.spans[i][1] > 3 for i in idx)
    A = e.attentions
    assert A.shape == (2, 2, len(e.tokens), len(e.tokens))
    np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(A, k=1) == 0)


def test_unknown_word_is_unk_not_an_error(encs):
    zh = encs["zh"]
    e = zh.encode(["我买了一个鳄梨。"])[0]
    assert e.tokens[6:8] == ["[UNK]", "[UNK]"] and e.known[6:8] == [False, False] and all(e.known[:6])
    assert zh.word_vectors(["我买了一个鳄梨。"], "鳄梨").shape == (1, 3, 32)
    assert not zh.in_vocab("鳄梨") and zh.in_vocab("苹果")


def test_empty_text(encs):
    assert encs["gpt2"].encode([""])[0].layers.shape == (3, 0, 32)  # no tokens at all: an empty encoding
    e = encs["zh"].encode([""])[0]
    assert e.tokens == ["[CLS]", "[SEP]"] and e.word_indices("苹果") == []


def test_truncation_flag(encs):
    e = encs["zh"].encode(["苹果" * 50, "苹果"])
    assert e[0].truncated and len(e[0].tokens) == 64 and e[0].tokens[-1] == "[SEP]"
    assert not e[1].truncated


def test_tokenize_matches_encode(encs):
    for enc in encs.values():
        e = enc.encode(["the riverbank 苹果手机"])[0]
        content = [(t, a, b) for t, (a, b) in zip(e.tokens, e.spans) if b > a]
        assert [t for t in enc.tokenize("the riverbank 苹果手机") if t[2] > t[1]] == content


def test_fill_mask_two_masks(encs):
    zh = encs["zh"]
    text = "我买了一个[MASK]果[MASK]机。"
    res = zh.fill_mask(text, topk=3, originals=["苹", "手"])
    assert [r["char_offset"] for r in res] == [5, 12] and [r["index"] for r in res] == [6, 8]
    ids = zh.tokenizer(text.replace("[MASK]", zh.tokenizer.mask_token), return_tensors="pt")
    with torch.no_grad():
        logits = zh.model(**ids).logits[0]
    logits[:, zh.tokenizer.all_special_ids] = float("-inf")
    for r in res:
        p = logits[r["index"]].softmax(-1)
        assert len(r["candidates"]) == 3 and r["candidates"][0] == (
            zh.tokenizer.convert_ids_to_tokens(int(p.argmax())),
            round(float(p.max()), 6),
        )
        assert r["original"]["rank"] >= 1 and 0 < r["original"]["prob"] < 1
    assert zh.fill_mask("[MASK]", originals=["鳄"])[0]["original"] == {"token": "鳄", "rank": None, "prob": None}
    assert encs["zh_nsp"].fill_mask("苹[MASK]", topk=2)[0]["candidates"][0][0] not in ("[CLS]", "[SEP]", "[MASK]")
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        zh.fill_mask("我买了苹果")
    with pytest.raises(ValueError, match="masked language model"):
        encs["gpt2"].fill_mask("the [MASK] sat")


def test_next_sentence_and_pairs(encs):
    nsp = encs["zh_nsp"]
    p = nsp.next_sentence("我买了一个苹果手机。", "手机没电了。")
    a, b = "我买了一个苹果手机。", "手机没电了。"
    ids = nsp.tokenizer(a, b, return_tensors="pt", return_token_type_ids=True)
    assert ids["token_type_ids"][0].tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    with torch.no_grad():
        want = nsp.model(**ids).seq_relationship_logits.softmax(-1)[0, 0]
    assert p == pytest.approx(float(want), abs=1e-6) and 0 < p < 1
    e = nsp.encode_pair(a, b)
    assert e.segment_ids.count(1) == len(b) + 1 and e.spans[len(a) + 1] == (len(a), len(a))
    assert e.text[e.spans[len(a) + 2][0]] == "手"
    with pytest.raises(ValueError, match="next-sentence head"):
        encs["zh"].next_sentence(a, b)


def test_next_token_and_rank(encs):
    g = encs["gpt2"]
    top = g.next_char("the cat", topk=4)
    assert len(top) == 4 and all(isinstance(t, str) and 0 < p < 1 for t, p in top)
    assert [p for _, p in top] == sorted((p for _, p in top), reverse=True)
    tok, prob = next((t, p) for t, p in top[1:] if "\ufffd" not in t)  # not part of a character's bytes
    r = g.char_rank("the cat", tok)
    assert r["rank"] == 1 + sum(p > prob for _, p in top) and r["prob"] == pytest.approx(prob, abs=1e-6)
    assert g.char_rank("the cat", " river")["rank"] >= 1  # a word-start piece (Ġriver) as next_char shows it
    assert g.char_rank("the cat", "鳄梨苹果手机") == {"token": "鳄梨苹果手机", "rank": None, "prob": None}
    with pytest.raises(ValueError, match="empty"):
        g.next_char("")
    with pytest.raises(ValueError, match="causal"):
        encs["zh"].next_char("我")


def test_generate_seeded_and_validated(encs):
    g = encs["gpt2"]
    a, b = g.generate("the cat", max_new=12, seed=1), g.generate("the cat", max_new=12, seed=1)
    assert a == b and a["text"] == "the cat" + a["generated"] and len(a["steps"]) == 12
    assert a["generated"] != g.generate("the cat", max_new=12, seed=2)["generated"]
    s = a["steps"][0]
    assert {"char", "prob", "sample_prob", "candidates"} <= set(s) and len(s["candidates"]) == 5
    assert g.tokenizer.decode([t["id"] for t in a["steps"]]) == a["generated"]
    for name, bad in (
        ("temperature", 0),
        ("top_k", 0),
        ("max_new", 0),
        ("repetition_penalty", 0),
        ("no_repeat_ngram", -1),
        ("no_repeat_ngram", 1.5),
    ):
        with pytest.raises(ValueError, match=name):
            g.generate("the cat", **{name: bad})


def _ngrams(ids, n):
    return [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]


def test_repetition_options(encs):
    g = encs["gpt2"]
    # greedy-ish (top_k=1): the random model loops; the n-gram ban and the penalty must change that
    plain = g.generate("the cat", max_new=30, top_k=1)
    banned = g.generate("the cat", max_new=30, top_k=1, no_repeat_ngram=2)
    ids = g.prompt_ids("the cat") + [s["id"] for s in banned["steps"]]
    grams = _ngrams(ids, 2)
    assert len(grams) == len(set(grams)), "a 2-gram repeated despite no_repeat_ngram=2"
    plain_ids = g.prompt_ids("the cat") + [s["id"] for s in plain["steps"]]
    assert len(set(_ngrams(plain_ids, 2))) < len(_ngrams(plain_ids, 2))  # without the ban it does repeat
    assert g.generate("the cat", max_new=30, top_k=1, repetition_penalty=5.0)["generated"] != plain["generated"]
    assert writing.ngram_bans([1, 2, 3, 1, 2], 3) == {3} and writing.ngram_bans([1, 2], 0) == set()
    x = torch.tensor([2.0, -2.0, 1.0])
    assert gpt_model.penalise_repeats(x, [0, 1], 2.0).tolist() == [1.0, -4.0, 1.0]


def test_vocab_words_and_nearest(encs, monkeypatch, tmp_path):
    words = encs["en"].vocab_words(5)
    assert words == ["the", "river", "bank", "is", "green"]  # whole words in id order: no ##bank, no single letters
    assert all(w.isalpha() and len(w) >= 2 for w in encs["gpt2"].vocab_words(50))
    counts = [("，", 9), ("的", 8), ("苹果", 7), ("鳄梨", 6), ("手机", 5), ("天气", 4)]  # stands in for the corpus
    monkeypatch.setattr(lexicon, "train_word_counts", lambda: counts)
    assert encs["zh"].vocab_words(10) == ["苹果", "手机", "天气"]  # every character known, punctuation left out
    monkeypatch.setenv("CTXLAB_CACHE", str(tmp_path))
    en = encs["en"]
    v = en.word_vectors(["the riverbank is green"], "riverbank")[0, 2]
    near = en.nearest_words(v, layer=2, topn=3)
    assert len(near) == 3 and all(w in en.vocab_words() and -1 <= c <= 1 for w, c in near)


def _copy(folders, key, tmp_path, name):
    d = tmp_path / name
    shutil.copytree(folders[key], d)
    return d


def test_bad_folders_are_one_line_errors(folders, tmp_path):
    cases = {}
    d = _copy(folders, "zh", tmp_path, "no_tok")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (d / f).unlink()
    cases["no tokenizer"] = d
    d = _copy(folders, "zh", tmp_path, "no_config")
    (d / "config.json").unlink()
    cases["config.json is missing"] = d
    d = _copy(folders, "zh", tmp_path, "bad_config")
    (d / "config.json").write_text("{not json")
    cases["corrupt"] = d
    d = _copy(folders, "zh", tmp_path, "bad_weights")
    (d / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    cases["model.safetensors is corrupt"] = d
    d = _copy(folders, "zh", tmp_path, "no_weights")
    (d / "model.safetensors").unlink()
    cases["no weights"] = d
    d = _copy(folders, "zh", tmp_path, "custom_arch")
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(model_type="my_custom_model", architectures=["MyModel"], auto_map={"AutoModel": "modeling_my.MyModel"})
    (d / "config.json").write_text(json.dumps(cfg))
    cases["not supported"] = d
    d = _copy(folders, "zh", tmp_path, "enc_dec")
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(model_type="t5", architectures=["T5ForConditionalGeneration"], is_encoder_decoder=True)
    (d / "config.json").write_text(json.dumps(cfg))
    cases["T5ForConditionalGeneration"] = d
    for why, d in cases.items():
        with pytest.raises(HfModelError, match=why) as ei:
            hf.load(str(d))
        assert isinstance(ei.value, CheckpointError) and "\n" not in str(ei.value), why


def test_bin_weights_safe_and_unsafe(folders, encs, tmp_path):
    from safetensors.torch import load_file

    d = _copy(folders, "zh", tmp_path, "bin")
    sd = load_file(d / "model.safetensors")
    (d / "model.safetensors").unlink()
    torch.save(sd, d / "pytorch_model.bin")
    e = hf.load(str(d))  # a plain state dict loads through weights-only unpickling
    np.testing.assert_allclose(e.encode(["苹果"])[0].layers, encs["zh"].encode(["苹果"])[0].layers, atol=1e-6)
    torch.save({**sd, "extra": hf_tiny.NotATensor()}, d / "pytorch_model.bin")
    with pytest.raises(HfModelError, match="unsafe unpickling") as ei:
        hf.load(str(d))
    assert "\n" not in str(ei.value)


def test_hub_name_offline_and_download_offline(tmp_path, monkeypatch):
    import huggingface_hub.constants as hc

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CTXLAB_ALLOW_DOWNLOAD", raising=False)
    with pytest.raises(HfModelError, match="not in the Hugging Face cache") as ei:
        hf.load("ctxlab-test/no-such-model-7f3a9")
    assert "\n" not in str(ei.value)
    with pytest.raises(HfModelError, match="Could not download"):
        hf.load("ctxlab-test/no-such-model-7f3a9", download=True)
    with pytest.raises(HfModelError, match="Could not download"):
        hf.download("ctxlab-test/no-such-model-7f3a9", tmp_path / "out")
    with pytest.raises(HfModelError, match="not a folder"):
        hf.load(str(tmp_path / "missing" / "deeper"))
    with pytest.raises(HfModelError, match="No model"):
        hf.load("  ")


def test_importing_ctxlib_does_not_import_transformers():
    code = (
        "import sys, ctxlib, ctxlib.encoder, ctxlib.models.hf, ctxlib.models.hf_load; "
        "print('transformers' in sys.modules, 'huggingface_hub' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.stdout.split() == ["False", "False"]


def test_generation_keeps_listed_names_out(encs):
    """A "name" the model writes unbanned (two characters of its own output) never appears once it is banned."""
    g, prompt = encs["gpt2"], "the cat"
    free = g.generate(prompt, max_new=12, temperature=1.0, top_k=50, seed=3)["generated"]
    name = next(free[i : i + 2] for i in range(len(free) - 1) if free[i : i + 2].strip() == free[i : i + 2])
    banned = g.generate(prompt, max_new=12, temperature=1.0, top_k=50, seed=3, banned_names=[name])
    assert name not in banned["text"]
    assert g.generate(prompt, max_new=12, temperature=1.0, top_k=50, seed=3, banned_names=[])["generated"] == free
