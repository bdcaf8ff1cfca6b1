"""Pre-training data: the Devlin et al. masking proportions and NSP pairs."""

import numpy as np
import pytest

from ctxlib import corpus
from ctxlib.models.bert import CharTokenizer
from ctxlib.training.bert_batches import PretrainBatches
from ctxlib.training.bert_data import Documents, collate, make_example


@pytest.fixture(scope="module")
def setup():
    pars = corpus.load("all", "train")
    rng = np.random.default_rng(0)
    pars = [pars[i] for i in sorted(rng.permutation(len(pars))[:600])]
    tok = CharTokenizer.build(pars, min_count=1)
    return pars, tok, Documents(pars, tok)


def test_example_structure(setup):
    pars, tok, docs = setup
    e = make_example(0, tok, pars, max_len=64)
    assert e["original_tokens"][0] == "[CLS]" and e["original_tokens"][-1] == "[SEP]"
    n_a = len(e["original_tokens"][1 : e["original_tokens"].index("[SEP]")])
    assert len(e["tokens"]) == len(e["segment_ids"]) <= 64
    assert list(e["segment_ids"][: n_a + 2]) == [0] * (n_a + 2) and set(e["segment_ids"][n_a + 2 :]) == {1}
    assert e["a_text"] and e["b_text"]
    for m in e["masked"]:
        assert e["original_tokens"][m["index"]] == m["original"]
        assert e["tokens"][m["index"]] == m["replacement"]
        assert m["original"] not in ("[CLS]", "[SEP]", "[PAD]")
        if m["kind"] == "mask":
            assert m["replacement"] == "[MASK]"
        if m["kind"] == "kept":
            assert m["replacement"] == m["original"]
    # unchosen positions are untouched
    chosen = {m["index"] for m in e["masked"]}
    assert all(a == b for i, (a, b) in enumerate(zip(e["tokens"], e["original_tokens"])) if i not in chosen)


def test_masking_proportions(setup):
    pars, tok, docs = setup
    rng = np.random.default_rng(1)
    n_cand = n_chosen = 0
    kinds = {"mask": 0, "random": 0, "kept": 0}
    for _ in range(3000):
        e = make_example(rng, tok, docs, max_len=128)
        n_cand += sum(t not in ("[CLS]", "[SEP]") for t in e["original_tokens"])
        n_chosen += len(e["masked"])
        for m in e["masked"]:
            kinds[m["kind"]] += 1
    assert abs(n_chosen / n_cand - 0.15) < 0.01
    assert abs(kinds["mask"] / n_chosen - 0.8) < 0.02
    assert abs(kinds["random"] / n_chosen - 0.1) < 0.015
    assert abs(kinds["kept"] / n_chosen - 0.1) < 0.015


def test_nsp_pairs_respect_documents(setup):
    pars, tok, docs = setup
    rng = np.random.default_rng(2)
    n_next = 0
    N = 2000
    for _ in range(N):
        e = make_example(rng, tok, docs, max_len=128)
        a, b = docs.docs[e["a_doc"]], docs.docs[e["b_doc"]]
        if e["is_next"]:
            n_next += 1
            assert e["a_doc"] == e["b_doc"]
            assert e["a_text"] + e["b_text"] in a.text  # B follows A directly in the same document
        else:
            assert e["a_doc"] != e["b_doc"] and a.source == b.source
            assert e["b_text"] in b.text
    assert abs(n_next / N - 0.5) < 0.04


def test_masks_are_fresh_each_epoch_and_whole_words(setup):
    pars, tok, docs = setup
    e1 = make_example(np.random.default_rng(5), tok, docs, doc_index=docs.a_docs[3])
    e2 = make_example(np.random.default_rng(6), tok, docs, doc_index=docs.a_docs[3])
    assert e1["masked"] != e2["masked"] or e1["b_text"] != e2["b_text"]
    # whole-word masking: a chosen character's whole (gold/jieba) word is chosen with it
    rng = np.random.default_rng(7)
    multi = 0
    for _ in range(300):
        e = make_example(rng, tok, docs, whole_word=True, max_len=64)
        idx = {m["index"] for m in e["masked"]}
        w = np.array(e["word_ids"])
        for i in idx:
            members = set(np.nonzero(w == w[i])[0].tolist())
            assert members <= idx
            multi += len(members) > 1
    assert multi > 0


def test_batches_collate(setup):
    pars, tok, docs = setup
    b = next(iter(PretrainBatches(docs, 8, 64, seed=0)))
    assert b["ids"].shape == b["segment_ids"].shape and b["ids"].shape[0] == 8
    assert len(b["mlm_pos"]) == len(b["mlm_labels"]) > 0
    flat = b["ids"].reshape(-1)
    assert (flat[b["mlm_pos"]] != 0).all()  # masked positions are never padding
    assert set(b["nsp"].tolist()) <= {0, 1}
    c = collate([make_example(0, tok, docs, max_len=32)])
    assert c["ids"].shape[0] == 1


def _whole_words_only(e) -> bool:
    idx = {m["index"] for m in e["masked"]}
    w = np.array(e["word_ids"])
    return all(set(np.nonzero(w == w[i])[0].tolist()) <= idx for i in idx)


def test_whole_word_share_mixes_the_two_maskings(setup):
    pars, tok, docs = setup
    rng = np.random.default_rng(11)
    whole = [_whole_words_only(make_example(rng, tok, docs, whole_word=0.5, max_len=64)) for _ in range(400)]
    # char masking leaves part of a multi-character word visible in most examples; with share 0.5 about half
    # the examples are whole-word only (plus the char-masked ones that happen to cut no word)
    share = sum(whole) / len(whole)
    char_only = [_whole_words_only(make_example(rng, tok, docs, whole_word=False, max_len=64)) for _ in range(400)]
    base = sum(char_only) / len(char_only)
    assert base < 0.3
    assert 0.5 + 0.5 * base - 0.08 < share < 0.5 + 0.5 * base + 0.08
    with pytest.raises(ValueError):
        make_example(rng, tok, docs, whole_word=1.5, max_len=64)


def test_random_replacement_draws_non_special_tokens_uniformly():
    """The 10% "random" replacements: a token drawn from the whole non-special vocabulary (so the original only by
    chance, 1 in 10 here), never [PAD]/[UNK]/[CLS]/[SEP]/[MASK]."""
    from types import SimpleNamespace

    from ctxlib.training.bert_data import mask_tokens

    tok = CharTokenizer.build([SimpleNamespace(text="甲乙丙丁戊己庚辛壬癸")], min_count=1)
    n_words = len(tok) - tok.n_special
    assert n_words == 10
    body = np.array([tok.token_id(c) for c in "甲乙丙丁戊己庚辛壬癸" * 4])
    base = np.concatenate([[tok.cls_id], body, [tok.sep_id]])
    groups = np.concatenate([[-1], np.arange(len(body)), [-1]])
    rng = np.random.default_rng(5)
    drawn, same = [], 0
    for _ in range(2500):
        ids = base.copy()
        for m in mask_tokens(rng, ids, groups, tok):
            assert m["original_id"] == base[m["index"]] and m["replacement"] == tok.itos[ids[m["index"]]]
            if m["kind"] == "random":
                drawn.append(int(ids[m["index"]]))
                same += int(ids[m["index"]] == base[m["index"]])
    drawn = np.array(drawn)
    assert len(drawn) > 1000
    assert drawn.min() >= tok.n_special  # never a special token
    assert same / len(drawn) < 0.15  # the original token only by chance (1/10), not kept
    share = np.bincount(drawn - tok.n_special, minlength=n_words) / len(drawn)
    assert np.abs(share - 1 / n_words).max() < 0.03  # uniform over the 10 words (sd of a share ~0.006 here)


def test_collate_labels_are_the_original_ids(setup):
    pars, tok, docs = setup
    rng = np.random.default_rng(7)
    ex = [make_example(rng, tok, docs, max_len=64) for _ in range(16)]
    b = collate(ex)
    T = b["ids"].shape[1]
    want_pos = [i * T + m["index"] for i, e in enumerate(ex) for m in e["masked"]]
    want_lab = [int(e["original_ids"][m["index"]]) for e in ex for m in e["masked"]]
    assert b["mlm_pos"].tolist() == want_pos and b["mlm_labels"].tolist() == want_lab
    corrupted = b["ids"].reshape(-1)[b["mlm_pos"]]
    assert int((corrupted != b["mlm_labels"]).sum()) > 0.7 * len(want_lab)  # most inputs are [MASK]: labels differ
    assert b["nsp"].tolist() == [int(e["is_next"]) for e in ex]
