"""BERT pre-training data on tiny hand-made corpora, checked exactly: how `Documents` tokenises paragraphs (word
indices, clause starts, sources), how `make_example` lays out [CLS] A [SEP] B [SEP] (segments, word groups, the split
at a clause, IsNext vs NotNext, the target length and its truncation), whole-word masking, and the batch iterators
(one pass over the documents per epoch, length grouping, shards per rank, exact resume). test_bert_data.py checks the
proportions on real corpus text; this file needs no corpus and runs in a few seconds.

Most corpora here give every character its own code point (only the clause marks repeat), so each token of an example
says which document and position it came from."""

import itertools

import numpy as np
import pytest
import torch

from ctxlib import corpus, user_text
from ctxlib.models.bert import CharTokenizer
from ctxlib.tokens import norm_token
from ctxlib.training import bert_data
from ctxlib.training.bert_batches import PretrainBatches, StreamPretrainBatches
from ctxlib.training.bert_data import Documents, make_example, mask_tokens

BREAK = "，"
END = "。"


def _paragraphs(spec, source="s", first_char=0x4E00, word_len=2):
    """One Paragraph per entry of `spec` (a list of clause lengths): clauses of fresh characters, each ended by
    '，' (the last by '。'; a clause length of 0 gives a doc without any mark), words of `word_len` characters."""
    code = itertools.count(first_char)
    out = []
    for d, clauses in enumerate(spec):
        words = []
        for k, n in enumerate(clauses):
            chars = [chr(next(code)) for _ in range(n)]
            words += ["".join(chars[i : i + word_len]) for i in range(0, n, word_len)]
            if len(clauses) > 1:
                words.append(END if k == len(clauses) - 1 else BREAK)
        out.append(corpus.Paragraph(source, d, words, split="train"))
    return out


def _setup(spec_by_source):
    pars, first = [], 0x4E00
    for source, spec in spec_by_source.items():
        ps = _paragraphs(spec, source, first)
        first += sum(sum(c) for c in spec) + 10
        pars += ps
    tok = CharTokenizer.build(pars, min_count=1)
    return pars, tok, Documents(pars, tok)


def _where(docs):
    """token id -> (document, position) for every id that occurs once in the corpus."""
    seen: dict[int, list] = {}
    for di, d in enumerate(docs.docs):
        for p, t in enumerate(d.ids.tolist()):
            seen.setdefault(t, []).append((di, p))
    return {t: v[0] for t, v in seen.items() if len(v) == 1}


def _layout(e, docs, where):
    """(n_a, n_b, a0, s, b0) of an example: A = a_doc[a0:s], B = b_doc[b0:b0 + n_b]; checks the frame on the way."""
    tk = docs.tokenizer
    orig = e["original_ids"].tolist()
    seg = e["segment_ids"].tolist()
    n_a = seg.count(0) - 2
    n_b = seg.count(1) - 1
    assert n_a >= 1 and n_b >= 1
    assert seg == [0] * (n_a + 2) + [1] * (n_b + 1)  # segment 0 = [CLS] A [SEP], 1 = B [SEP]
    assert orig[0] == tk.cls_id and orig[1 + n_a] == tk.sep_id and orig[-1] == tk.sep_id
    assert len(orig) == n_a + n_b + 3
    assert tk.cls_id not in orig[1:] and orig.count(tk.sep_id) == 2
    a, b = orig[1 : 1 + n_a], orig[2 + n_a : -1]

    def start(part, doc):
        for k, t in enumerate(part):
            if t in where:
                di, p = where[t]
                assert di == doc
                return p - k
        return None  # only clause marks: ambiguous

    a0, b0 = start(a, e["a_doc"]), start(b, e["b_doc"])
    if a0 is not None:
        assert docs.docs[e["a_doc"]].ids[a0 : a0 + n_a].tolist() == a
    if b0 is not None:
        assert docs.docs[e["b_doc"]].ids[b0 : b0 + n_b].tolist() == b
    return n_a, n_b, a0, None if a0 is None else a0 + n_a, b0


# ----------------------------------------------------------------------------- Documents
def test_documents_token_ids_spans_words_and_clause_starts():
    pars = [
        corpus.Paragraph("news", 0, ["我们", "喜欢", "，", "BERT", "模型", "X光", "。", "好"], split="train"),
        corpus.Paragraph("news", 1, [], split="train"),  # empty: skipped
        corpus.Paragraph("review", 2, ["读书", "。"], split="train"),
        corpus.Paragraph("news", 3, ["书"], split="train"),
    ]  # one token: a document, never an A side
    tok = CharTokenizer.build(pars, min_count=1)
    docs = Documents(pars, tok)
    assert len(docs) == 3 and [d.source for d in docs.docs] == ["news", "review", "news"]
    d = docs.docs[0]
    toks = ["我", "们", "喜", "欢", "，", "BERT", "模", "型", "X", "光", "。", "好"]
    assert d.text == "我们喜欢，BERT模型X光。好" and d.ids.tolist() == [tok.token_id(t) for t in toks]
    assert d.ids.dtype == np.int64 and tok.unk_id not in d.ids.tolist()
    assert d.spans == [
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 4),
        (4, 5),
        (5, 9),
        (9, 10),
        (10, 11),
        (11, 12),
        (12, 13),
        (13, 14),
        (14, 15),
    ]
    assert d.words.tolist() == [0, 0, 1, 1, 2, 3, 4, 4, 5, 5, 6, 7]  # the paragraph's words, one index per token
    assert d.starts.tolist() == [0, 5, 11]  # a clause starts at 0 and after ， and 。 (not after the X of X光)
    assert docs.docs[1].starts.tolist() == [0]  # a final 。 starts nothing
    assert docs.docs[1].words.tolist() == [0, 0, 1]
    assert docs.by_source == {"news": [0, 2], "review": [1]}
    assert docs.a_docs == [0, 1]  # the one-token document is never an A side
    assert Documents(pars, tok, min_tokens=3).a_docs == [0, 1]
    assert Documents(pars, tok, min_tokens=4).a_docs == [0]
    assert Documents(pars, tok, min_tokens=1).a_docs == [0, 1, 2]


def test_documents_need_two_documents_and_one_a_side():
    pars = _paragraphs([[2], [1]])
    tok = CharTokenizer.build(pars, min_count=1)
    assert Documents(pars, tok).a_docs == [0]  # two documents, one with two tokens: the least that makes pairs
    with pytest.raises(ValueError, match=r"^need at least two documents, one with >= 2 tokens, to make NSP pairs$"):
        Documents(pars[:1], tok)
    with pytest.raises(ValueError, match=r"^need at least two documents, one with >= 2 tokens, to make NSP pairs$"):
        Documents(_paragraphs([[1], [1]]), tok)  # no document with two tokens
    with pytest.raises(ValueError, match=r"^need at least two documents, one with >= 2 tokens, to make NSP pairs$"):
        Documents(pars, tok, min_tokens=3)  # no A side
    with pytest.raises(ValueError, match=r"^need at least two documents, one with >= 2 tokens, to make NSP pairs$"):
        Documents(pars[:1] + [corpus.Paragraph("s", 9, [" "], split="train")], tok)  # a blank one is no document


def test_prepared_documents_are_cached_per_paragraph_list():
    pars, tok, _ = _setup({"s": [[5], [5], [5]]})
    d1 = bert_data._documents(pars, tok)
    assert bert_data._documents(pars, tok) is d1  # tokenised once
    assert bert_data._documents(d1, tok) is d1  # a prepared Documents passes through
    tok2 = CharTokenizer.build(pars, min_count=1)
    d_tok2 = bert_data._documents(pars, tok2)  # another tokenizer: tokenised again, with that tokenizer
    assert d_tok2 is not d1 and d_tok2.tokenizer is tok2
    other = list(pars)
    d2 = bert_data._documents(other, tok)
    assert d2 is not d1 and len(d2) == 3
    assert bert_data._documents(other, tok) is d2
    assert len(bert_data._PREPARED_BY_ID) == 1  # one corpus kept at a time
    other.append(_paragraphs([[4]], first_char=0x5E00)[0])
    assert len(bert_data._documents(other, CharTokenizer.build(other, min_count=1))) == 4  # a changed list: again


def test_span_text():
    pars, tok, docs = _setup({"s": [[3, 3], [4]]})
    d = docs.docs[0]
    assert bert_data._span_text(d, 0, 4) == d.text[:4] and bert_data._span_text(d, 2, 2) == ""
    assert bert_data._span_text(d, 3, 1) == "" and bert_data._span_text(d, 0, 0) == ""


# ----------------------------------------------------------------------------- make_example
@pytest.fixture(scope="module")
def clauses():
    """Two sources, documents of clauses of 3 to 9 characters (one source with a single short document)."""
    rng = np.random.default_rng(0)
    spec = {
        "news": [list(rng.integers(3, 10, rng.integers(2, 12))) for _ in range(12)],
        "one": [[3, 4]],
        "two": [[3, 4], [5]],
    }
    pars, tok, docs = _setup(spec)
    return pars, tok, docs, _where(docs)


def test_example_frame_segments_word_groups_and_texts(clauses):
    pars, tok, docs, where = clauses
    rng = np.random.default_rng(1)
    located = at_doc_start = 0
    for i in range(400):
        max_len = [8, 12, 24, 64][i % 4]
        e = make_example(rng, tok, docs, max_len=max_len, whole_word=bool(i % 2))
        n_a, n_b, a0, s, b0 = _layout(e, docs, where)
        assert len(e["ids"]) <= max_len
        assert e["ids"].dtype == np.int64 and e["segment_ids"].dtype == np.int64
        assert e["tokens"] == [tok.itos[t] for t in e["ids"]]
        assert e["original_tokens"] == [tok.itos[t] for t in e["original_ids"]]
        assert norm_token(e["a_text"]) == "".join(e["original_tokens"][1 : 1 + n_a])  # the vocabulary has "," for "，"
        assert norm_token(e["b_text"]) == "".join(e["original_tokens"][2 + n_a : -1])
        w = e["word_ids"]
        assert len(w) == len(e["ids"]) and w[0] == w[1 + n_a] == w[-1] == -1  # specials are in no word
        if a0 is None or b0 is None:
            continue
        located += 1
        at_doc_start += a0 == 0
        ad, bd = docs.docs[e["a_doc"]], docs.docs[e["b_doc"]]
        assert e["a_text"] == ad.text[ad.spans[a0][0] : ad.spans[s - 1][1]]
        assert e["b_text"] == bd.text[bd.spans[b0][0] : bd.spans[b0 + n_b - 1][1]]
        assert w[1 : 1 + n_a] == ad.words[a0:s].tolist()
        assert w[2 + n_a : -1] == (bd.words[b0 : b0 + n_b] + 10_000_000).tolist()  # B's words never merge with A's
        assert not set(w[1 : 1 + n_a]) & set(w[2 + n_a : -1])
        if e["is_next"]:
            assert e["b_doc"] == e["a_doc"] and b0 == s  # B is the true continuation
        else:
            assert e["b_doc"] != e["a_doc"] and bd.source == ad.source  # another document of the same source
        changed = {i for i in range(len(e["ids"])) if e["ids"][i] != e["original_ids"][i]}
        assert changed <= {m["index"] for m in e["masked"]}
    assert located > 300 and at_doc_start > 20  # A may begin at the document's first token


def test_example_uses_the_given_document_and_rejects_tiny_lengths(clauses):
    pars, tok, docs, where = clauses
    for j in docs.a_docs:
        e = make_example(j, tok, docs, max_len=16, doc_index=j)
        assert e["a_doc"] == j
    make_example(0, tok, docs, max_len=8)
    with pytest.raises(ValueError, match="^max_len must be at least 8$"):
        make_example(0, tok, docs, max_len=7)
    # a seed, a Generator and the paragraph list all work; the same seed gives the same example
    e1, e2 = make_example(3, tok, pars, max_len=32), make_example(np.random.default_rng(3), tok, pars, max_len=32)
    assert e1["original_ids"].tolist() == e2["original_ids"].tolist() and e1["masked"] == e2["masked"]


def test_a_ends_at_a_clause_mark_and_starts_at_a_clause_start(clauses):
    """The split point is a clause start 90% of the time (plus random picks that hit one); A begins at the first
    clause start within its reach, so it never begins mid-clause when a clause starts inside it."""
    pars, tok, docs, where = clauses
    rng = np.random.default_rng(2)
    at_start = n = 0
    for _ in range(1500):
        e = make_example(rng, tok, docs, max_len=32)
        n_a, n_b, a0, s, b0 = _layout(e, docs, where)
        if a0 is None:
            continue
        d = docs.docs[e["a_doc"]]
        if len(d.starts) < 2:
            continue
        n += 1
        at_start += s in d.starts.tolist()
        inside = [p for p in d.starts.tolist() if a0 < p < s]
        assert a0 in d.starts.tolist() or not inside
    inner = np.mean([(len(d.starts) - 1) / (len(d.ids) - 1) for d in docs.docs if len(d.starts) > 1])
    assert at_start / n == pytest.approx(0.9 + 0.1 * inner, abs=0.03)


def test_notnext_b_starts_at_a_clause_start_of_the_other_document(clauses):
    pars, tok, docs, where = clauses
    rng = np.random.default_rng(3)
    firsts, n = 0, 0
    expect_first = []
    for _ in range(1500):
        e = make_example(rng, tok, docs, max_len=32)
        if e["is_next"]:
            continue
        n_a, n_b, a0, s, b0 = _layout(e, docs, where)
        if b0 is None:
            continue
        bd = docs.docs[e["b_doc"]]
        assert b0 in bd.starts.tolist()
        n += 1
        firsts += b0 == 0
        expect_first.append(0.1 + 0.9 / len(bd.starts))
    assert n > 500
    assert firsts / n == pytest.approx(np.mean(expect_first), abs=0.04)


def test_is_next_half_the_time_and_always_when_the_source_has_one_document(clauses):
    pars, tok, docs, where = clauses
    rng = np.random.default_rng(4)
    news = docs.by_source["news"]
    flags = [make_example(rng, tok, docs, max_len=24, doc_index=news[i % len(news)])["is_next"] for i in range(2000)]
    assert sum(flags) / len(flags) == pytest.approx(0.5, abs=0.035)
    (only,) = docs.by_source["one"]
    assert all(make_example(rng, tok, docs, max_len=24, doc_index=only)["is_next"] for _ in range(50))
    two = docs.by_source["two"]
    pairs = [make_example(rng, tok, docs, max_len=24, doc_index=two[0]) for _ in range(60)]
    assert {e["b_doc"] for e in pairs if not e["is_next"]} == {two[1]}  # with two documents, B is the other one


@pytest.fixture(scope="module")
def long_docs():
    """Documents far longer than an example: 'plain' ones without any clause mark, 'marked' ones with clauses."""
    spec = {"plain": [[400] for _ in range(3)], "marked": [[5] * 80 for _ in range(3)]}
    pars, tok, docs = _setup(spec)
    return pars, tok, docs, _where(docs)


def test_target_length_full_nine_times_in_ten_else_uniform_from_4(long_docs):
    """An IsNext B that stops before its document ends shows the target length: n_a + n_b. It is the full budget
    (max_len - 3) 90% of the time, else uniform in [4, budget]; no example is ever longer than max_len."""
    pars, tok, docs, where = long_docs
    rng = np.random.default_rng(5)
    max_len, budget = 16, 13
    targets, lengths = [], []
    for _ in range(3000):
        e = make_example(rng, tok, docs, max_len=max_len)
        n_a, n_b, a0, s, b0 = _layout(e, docs, where)
        lengths.append(len(e["ids"]))
        if e["is_next"] and s is not None and s + n_b < len(docs.docs[e["a_doc"]].ids):
            targets.append(n_a + n_b)
    assert max(lengths) == max_len
    t = np.array(targets)
    assert len(t) > 1200 and t.min() == 4 and t.max() == budget
    full = (t == budget).mean()
    assert full == pytest.approx(0.9 + 0.1 / (budget - 3), abs=0.025)
    short = np.bincount(t[t < budget], minlength=budget)[4:]
    assert short.min() > 0  # every shorter length occurs


def test_a_length_is_a_quarter_to_three_quarters_of_the_target(long_docs):
    """Without clause marks A is exactly the drawn length: uniform in [target // 4, 3 * target // 4]."""
    pars, tok, docs, where = long_docs
    rng = np.random.default_rng(6)
    plain = docs.by_source["plain"]
    lens = {}
    for i in range(2500):
        e = make_example(rng, tok, docs, max_len=32, doc_index=plain[i % 3])
        n_a, n_b, a0, s, b0 = _layout(e, docs, where)
        if e["is_next"] and s + n_b < 400 and s > 25:
            lens.setdefault(n_a + n_b, []).append(n_a)
    full = np.array(lens[29])
    assert full.min() == 29 // 4 and full.max() == 3 * 29 // 4
    assert np.bincount(full, minlength=22)[7:].min() > 30  # each length in between, roughly uniformly
    for target, a in lens.items():
        assert max(1, target // 4) <= min(a) and max(a) <= max(2, 3 * target // 4)
    assert min(a for t in range(4, 8) for a in lens.get(t, [])) == 1  # a short target allows a one-token A


def test_a_begins_at_the_first_clause_start_within_reach(long_docs):
    """Clauses of 6 tokens (5 characters and a mark), target 24: A wants 6 to 18 tokens back from a split at a clause
    start and begins at the first clause start at or after that point, so it is 6, 12 or 18 tokens: all three occur
    (18 only when the drawn length reaches a start exactly)."""
    pars, tok, docs, where = long_docs
    rng = np.random.default_rng(13)
    marked = docs.by_source["marked"]
    seen = []
    for i in range(600):
        e = make_example(rng, tok, docs, max_len=27, doc_index=marked[i % 3])
        n_a, n_b, a0, s, b0 = _layout(e, docs, where)
        if e["is_next"] and s is not None and s % 6 == 0 and s + n_b < 480 and n_a + n_b == 24 and s >= 18:
            seen.append(n_a)
    assert set(seen) == {6, 12, 18}


def test_notnext_b_is_as_long_as_the_true_continuation_would_be(long_docs):
    """Length is no NSP cue: with long documents both kinds fill the target, and a NotNext B is never longer than
    what follows A in its own document."""
    pars, tok, docs, where = long_docs
    rng = np.random.default_rng(7)
    by_kind = {True: [], False: []}
    for _ in range(1500):
        e = make_example(rng, tok, docs, max_len=24)
        n_a, n_b, a0, s, b0 = _layout(e, docs, where)
        by_kind[e["is_next"]].append(len(e["ids"]))
        if s is not None:
            assert n_b <= len(docs.docs[e["a_doc"]].ids) - s
        if b0 is not None:
            assert b0 + n_b <= len(docs.docs[e["b_doc"]].ids)
    assert np.mean(by_kind[True]) == pytest.approx(np.mean(by_kind[False]), abs=0.6)
    assert np.mean(np.array(by_kind[False]) == 24) > 0.8


def test_default_length_is_128(long_docs):
    pars, tok, docs, where = long_docs
    rng = np.random.default_rng(14)
    lens = [len(make_example(rng, tok, docs)["ids"]) for _ in range(30)]
    assert max(lens) == 128


def test_a_clause_start_right_after_the_first_token_is_a_split_point():
    pars = [
        corpus.Paragraph("s", 0, ["：", "甲乙", "丙丁", "戊己"], split="train"),
        corpus.Paragraph("s", 1, ["庚辛", "壬癸"], split="train"),
    ]
    tok = CharTokenizer.build(pars, min_count=1)
    docs = Documents(pars, tok)
    assert docs.docs[0].starts.tolist() == [0, 1]
    rng = np.random.default_rng(15)
    at_1 = [make_example(rng, tok, docs, max_len=16, doc_index=0)["a_text"] == "：" for _ in range(200)]
    assert np.mean(at_1) == pytest.approx(0.9 + 0.1 / 6, abs=0.06)  # the split after "：" nine times in ten


def test_two_token_documents_split_in_the_middle():
    pars, tok, docs = _setup({"s": [[2], [2], [2]]})
    rng = np.random.default_rng(8)
    for _ in range(40):
        e = make_example(rng, tok, docs, max_len=8)
        assert len(e["ids"]) == 5 and e["segment_ids"].tolist() == [0, 0, 0, 1, 1]
        a, b = e["original_ids"][1], e["original_ids"][3]
        d = docs.docs[e["a_doc"]]
        assert a == d.ids[0]
        assert b == (d.ids[1] if e["is_next"] else docs.docs[e["b_doc"]].ids[0])


def test_a_last_short_notnext_b_stops_at_its_document_end():
    pars, tok, docs = _setup({"s": [[40], [1, 1]]})  # doc 1: x，y。 (4 tokens)
    where = _where(docs)
    rng = np.random.default_rng(9)
    seen = 0
    for _ in range(200):
        e = make_example(rng, tok, docs, max_len=32, doc_index=0)
        if not e["is_next"]:
            n_a, n_b, a0, s, b0 = _layout(e, docs, where)
            assert e["b_doc"] == 1 and b0 + n_b <= 4
            seen += b0 is not None and b0 + n_b == 4
    assert seen > 20


# ----------------------------------------------------------------------------- whole-word masking
def test_whole_words_fill_exactly_and_a_long_first_word_is_kept_whole():
    tk = CharTokenizer.build(_paragraphs([[20]]), min_count=1)
    ids = np.array([tk.cls_id] + list(range(tk.n_special, tk.n_special + 20)) + [tk.sep_id])
    rng = np.random.default_rng(10)
    # words of 2 and 1 characters; 3 of 20 to choose: a word that fits exactly is taken, one that overshoots skipped
    groups = np.array([-1] + [g for g in range(14) for _ in range(2 if g % 2 == 0 else 1)][:20] + [-1])
    assert len(groups) == 22
    for _ in range(100):
        out = mask_tokens(rng, ids.copy(), groups, tk, whole_word=True)
        idx = [m["index"] for m in out]
        assert len(idx) == 3 and idx == sorted(idx)
        for i in idx:
            assert set(np.nonzero(groups == groups[i])[0]) <= set(idx)
    # one 20-character word: chosen first, it is taken whole although it overshoots the 3
    one = np.array([-1] + [0] * 20 + [-1])
    assert [m["index"] for m in mask_tokens(rng, ids.copy(), one, tk, whole_word=True)] == list(range(1, 21))
    assert len(mask_tokens(rng, ids.copy(), one, tk, whole_word=1)) == 20
    assert len(mask_tokens(rng, ids.copy(), one, tk, whole_word=0.0)) == 3
    assert len(mask_tokens(rng, ids.copy(), one, tk)) == 3  # the default masks characters
    with pytest.raises(ValueError, match="^whole_word must be a bool or a share between 0 and 1, not -0.1$"):
        mask_tokens(rng, ids.copy(), one, tk, whole_word=-0.1)


def test_whole_word_share_is_the_share_of_examples():
    tk = CharTokenizer.build(_paragraphs([[20]]), min_count=1)
    ids = np.array([tk.cls_id] + list(range(tk.n_special, tk.n_special + 20)) + [tk.sep_id])
    one = np.array([-1] + [0] * 20 + [-1])  # whole-word masking takes all 20, character masking 3
    rng = np.random.default_rng(11)
    for share in (0.3, 0.8):
        whole = [len(mask_tokens(rng, ids.copy(), one, tk, whole_word=share)) == 20 for _ in range(1000)]
        assert np.mean(whole) == pytest.approx(share, abs=0.045)


def test_make_example_whole_word_masks_complete_words(clauses):
    pars, tok, docs, where = clauses
    rng = np.random.default_rng(12)
    multi = partial = 0
    for _ in range(300):
        for ww in (True, None):
            e = make_example(rng, tok, docs, max_len=32, **({} if ww is None else {"whole_word": ww}))  # default: chars
            idx = {m["index"] for m in e["masked"]}
            w = np.array(e["word_ids"])
            cut = [i for i in idx if not set(np.nonzero(w == w[i])[0].tolist()) <= idx]
            if ww:
                assert not cut
                multi += any((w == w[i]).sum() > 1 for i in idx)
            else:
                partial += bool(cut)
    assert multi > 100 and partial > 100  # character masking does cut words


# ----------------------------------------------------------------------------- batch iterators
def _originals(batch):
    ids = batch["ids"].clone().reshape(-1)
    ids[batch["mlm_pos"]] = batch["mlm_labels"]
    return ids.reshape(batch["ids"].shape)


def _a_docs(batch, where):
    """The A document of each row (A's first token, restored from the MLM labels when it was masked)."""
    return [where[int(row[1])][0] for row in _originals(batch)]


@pytest.fixture(scope="module")
def plain26():
    """26 documents of 30 unique characters (no clause marks) and one of a single character (never an A side)."""
    pars, tok, docs = _setup({"s": [[30]] * 26 + [[1]]})
    return pars, tok, docs, _where(docs)


def _lengths(batch):
    return (batch["ids"] != 0).sum(1).tolist()


@pytest.mark.parametrize("pool", [2, 4])
def test_each_epoch_visits_the_documents_once_in_a_new_order_grouped_by_length(plain26, pool):
    pars, tok, docs, where = plain26
    it = iter(PretrainBatches(docs, batch_size=4, max_len=24, seed=1, pool=pool))
    epochs = []
    for _ in range(3):
        batches = [next(it) for _ in range(6)]  # 26 documents, batches of 4: 24 per epoch, 2 left over
        rows = [d for b in batches for d in _a_docs(b, where)]
        assert len(set(rows)) == 24 and set(rows) <= set(docs.a_docs)
        epochs.append(rows)
        for b in batches:
            assert b["ids"].shape[0] == 4 and b["ids"].shape[1] == max(_lengths(b)) <= 24
            ids, seg = b["ids"], b["segment_ids"]
            assert (ids[:, 0] == tok.cls_id).all() and ((ids == 0) <= (seg == 0)).all()
        for c in range(0, 6, pool):  # each chunk of `pool` batches is sorted by length: their lengths do not interleave
            for b1, b2 in itertools.combinations(batches[c : c + pool], 2):
                l1, l2 = _lengths(b1), _lengths(b2)
                assert max(l1) <= min(l2) or max(l2) <= min(l1)
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2]
    assert set(epochs[0]) != set(epochs[1]) or set(epochs[1]) != set(epochs[2])  # the 2 left out change too


def test_nsp_labels_match_the_pairs(plain26):
    pars, tok, docs, where = plain26
    it = iter(PretrainBatches(docs, batch_size=4, max_len=24, seed=2, pool=1))
    n = 0
    for _ in range(12):
        b = next(it)
        for row, seg, nsp in zip(_originals(b), b["segment_ids"], b["nsp"]):
            a_first = int(row[1])
            b_first = int(row[int(((seg == 0) & (row != 0)).sum())])
            assert nsp.item() == int(where[a_first][0] == where[b_first][0])
            n += nsp.item()
    assert 12 < n < 36


def test_ranks_share_one_permutation_and_split_it(plain26):
    pars, tok, docs, where = plain26
    rows, per_batch = [], []
    for rank in (0, 1):
        it = iter(PretrainBatches(docs, batch_size=4, max_len=24, seed=3, pool=1, rank=rank, world=2))
        batches = [_a_docs(next(it), where) for _ in range(3)]  # 13 documents each: 3 batches
        per_batch.append([set(b) for b in batches])
        rows.append([d for b in batches for d in b])
    assert len(set(rows[0])) == len(set(rows[1])) == 12 and not set(rows[0]) & set(rows[1])
    single = iter(PretrainBatches(docs, batch_size=4, max_len=24, seed=3, pool=1))
    one = [d for _ in range(6) for d in _a_docs(next(single), where)]
    assert set(rows[0]) | set(rows[1]) != set(one) or rows[0] != one[:12]
    perm = np.random.default_rng([3, 7919]).permutation(docs.a_docs)  # the permutation every rank draws
    assert set(rows[0]) == set(perm[0::2][:12].tolist()) and set(rows[1]) == set(perm[1::2][:12].tolist())
    # pool 1: each batch is the next 4 documents of the shard, in order (no pooling and regrouping by length)
    assert per_batch == [[set(perm[r::2][4 * i : 4 * i + 4].tolist()) for i in range(3)] for r in (0, 1)]
    for rank, world in ((2, 2), (-1, 2), (1, 1)):
        with pytest.raises(ValueError, match=f"^rank {rank} outside world size {world}$"):
            PretrainBatches(docs, 4, 24, rank=rank, world=world)


def test_same_seed_same_batches_other_seed_other_batches(plain26):
    pars, tok, docs, where = plain26

    def first(seed, pool=16):
        it = iter(PretrainBatches(docs, 4, 24, seed=seed, pool=pool))
        return [next(it) for _ in range(3)]

    a, b, c = first(5), first(5), first(6)
    assert all(torch.equal(x["ids"], y["ids"]) for x, y in zip(a, b))
    assert not all(torch.equal(x["ids"], y["ids"]) for x, y in zip(a, c) if x["ids"].shape == y["ids"].shape) or any(
        x["ids"].shape != y["ids"].shape for x, y in zip(a, c)
    )
    z = first(5, pool=0)  # pool 0 is one batch at a time
    assert len(z) == 3 and all(x["ids"].shape[0] == 4 for x in z)


def _same(x, y):
    return all(torch.equal(x[k], y[k]) for k in ("ids", "segment_ids", "mlm_pos", "mlm_labels", "nsp"))


@pytest.mark.parametrize("taken", [1, 2, 3, 5, 6, 7, 13])  # inside a chunk, at chunk and epoch boundaries
def test_resume_gives_the_batches_an_uninterrupted_run_would_see(plain26, taken):
    pars, tok, docs, where = plain26
    make = lambda: PretrainBatches(docs, 4, 24, seed=4, pool=2, whole_word=0.5)  # noqa: E731
    ref = iter(make())
    want = [next(ref) for _ in range(taken + 5)]
    a = make()
    assert a.state_dict() is None
    it = iter(a)
    for _ in range(taken):
        next(it)
    state = a.state_dict()
    assert state["epoch"] == (taken - 1) // 6  # 6 batches an epoch
    b = make()
    b.load_state_dict(state)
    itb = iter(b)
    got = [next(itb) for _ in range(5)]
    assert all(_same(x, y) for x, y in zip(got, want[taken:]))
    assert b.state_dict()["epoch"] == (taken + 4) // 6
    fresh = [x for x, _ in zip(iter(make()), range(5))]
    assert not all(_same(x, y) for x, y in zip(fresh, want[taken:]))


# ----------------------------------------------------------------------------- streamed corpus
def _stream_files(tmp_path, n_lines, length=12, first=0x4E00):
    code = itertools.count(first)
    lines = ["".join(chr(next(code)) for _ in range(length)) for _ in range(n_lines)]
    f = tmp_path / "c.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    files = user_text.user_files(f)
    tok = CharTokenizer.build((user_text.user_paragraph(ln, i, words=False) for i, ln in enumerate(lines)), min_count=1)
    line_of = {tok.token_id(c): i for i, ln in enumerate(lines) for c in ln}
    return files, tok, line_of


@pytest.mark.parametrize(
    "pool, n_lines, n_batches, n_rows", [(1, 40, 10, 40), (2, 40, 10, 40), (1, 44, 11, 44), (2, 43, 10, 40)]
)
def test_stream_epochs_cover_every_line_once(tmp_path, pool, n_lines, n_batches, n_rows):
    """Buffers of 16 lines, batches of 4 made `pool` batches at a time: 40 lines are 4 + 4 + 2 batches, each line once
    as an A side; of a last buffer of 11 lines, 8 are used (the rest do not fill a batch)."""
    files, tok, line_of = _stream_files(tmp_path, n_lines)
    s = StreamPretrainBatches(files, tok, 4, 20, seed=1, pool=pool, buffer=16)
    it = iter(s)
    for epoch in range(3):
        batches = [[line_of[int(r[1])] for r in _originals(next(it))] for _ in range(n_batches)]
        rows = [d for b in batches for d in b]
        assert len(set(rows)) == len(rows) == n_rows and set(range(32)) <= set(rows)
        assert s.state_dict()["epoch"] == epoch
        if pool == 1 and epoch == 0:  # one batch at a time: the next 4 lines of the buffer's shuffled order
            perm = np.random.default_rng([1, 0]).permutation(16)
            assert [set(b) for b in batches[:4]] == [set(perm[4 * i : 4 * i + 4].tolist()) for i in range(4)]
    s2 = StreamPretrainBatches(files, tok, 4, 20, seed=1, pool=2, buffer=16, rank=1, world=2)
    rows = [line_of[int(r[1])] for _ in range(5) for r in _originals(next(iter(s2)))]
    assert set(rows) <= set(range(1, 40, 2))


@pytest.mark.parametrize("taken", [1, 3, 4, 9, 10, 11])  # inside a buffer, at buffer and epoch boundaries
def test_stream_resume_exactly(tmp_path, taken):
    files, tok, line_of = _stream_files(tmp_path, 40)
    make = lambda: StreamPretrainBatches(files, tok, 4, 20, seed=2, pool=2, buffer=16)  # noqa: E731
    ref = iter(make())
    want = [next(ref) for _ in range(taken + 4)]
    a = make()
    it = iter(a)
    for _ in range(taken):
        next(it)
    b = make()
    b.load_state_dict(a.state_dict())
    got = [x for x, _ in zip(iter(b), range(4))]
    assert all(_same(x, y) for x, y in zip(got, want[taken:]))


def test_defaults_are_character_masking_and_seed_0(tmp_path, plain26):
    pars, tok, docs, where = plain26
    a, b = iter(PretrainBatches(docs, 4, 24)), iter(PretrainBatches(docs, 4, 24, seed=0, whole_word=False))
    assert all(_same(next(a), next(b)) for _ in range(3))
    files, tok, _ = _stream_files(tmp_path, 20)
    a = iter(StreamPretrainBatches(files, tok, 4, 20))
    b = iter(StreamPretrainBatches(files, tok, 4, 20, seed=0, whole_word=False))
    assert all(_same(next(a), next(b)) for _ in range(3))


def _adjacent_share(batches):
    """Share of masked positions with a masked neighbour."""
    n = adj = 0
    for b in batches:
        pos = set(b["mlm_pos"].tolist())
        n += len(pos)
        adj += sum((p - 1 in pos) or (p + 1 in pos) for p in pos)
    return adj / n


def test_stream_whole_word_masks_jieba_words(tmp_path):
    """Whole-word masking of a user corpus uses jieba words (今天/天气/公园...): most masked characters have a masked
    neighbour, few with character masking."""
    lines = [
        "今天天气很好，我们去公园散步。",
        "苹果手机的电池不太耐用。",
        "妈妈在市场买了一斤苹果。",
        "他每天早上喝一杯牛奶。",
        "这家酒店的服务很周到，房间也干净。",
        "我们明天上午九点在学校门口见面。",
    ] * 6
    f = tmp_path / "w.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    files = user_text.user_files(f)
    tok = CharTokenizer.build((user_text.user_paragraph(ln, i, words=False) for i, ln in enumerate(lines)), min_count=1)
    share = {}
    for ww in (True, False):
        it = iter(StreamPretrainBatches(files, tok, 4, 32, seed=5, whole_word=ww, buffer=36))
        share[ww] = _adjacent_share([next(it) for _ in range(16)])
    assert share[True] > 0.5 and share[False] < 0.3


def test_stream_errors(tmp_path):
    files, tok, _ = _stream_files(tmp_path, 3)
    with pytest.raises(ValueError, match="^buffer must hold at least two batches of documents$"):
        StreamPretrainBatches(files, tok, 4, 20, buffer=7)
    with pytest.raises(
        ValueError,
        match="^the corpus gives this process fewer than 4 documents per pass; use a bigger corpus or a smaller batch$",
    ):
        next(iter(StreamPretrainBatches(files, tok, 4, 20, buffer=8)))
    b = next(iter(StreamPretrainBatches(files, tok, 1, 20, buffer=2)))  # buffer == 2 batches is enough
    assert b["ids"].shape[0] == 1


@pytest.mark.parametrize("n_lines, used", [(5, 5), (4, 3)])
def test_stream_last_short_buffer_is_used_from_two_lines(tmp_path, n_lines, used):
    """Buffers of 3 lines: a last buffer of 2 lines still makes pairs, one of a single line is left out."""
    files, tok, line_of = _stream_files(tmp_path, n_lines)
    it = iter(StreamPretrainBatches(files, tok, 1, 20, seed=3, pool=1, buffer=3))
    rows = [line_of[int(r[1])] for _ in range(2 * used) for r in _originals(next(it))]
    assert sorted(rows) == sorted(list(range(used)) * 2)


def test_collate_pads_with_id_0_by_default():
    ex = [
        {"ids": np.array([2, 7, 3]), "segment_ids": np.zeros(3, np.int64), "is_next": True, "masked": []},
        {"ids": np.array([2, 3]), "segment_ids": np.zeros(2, np.int64), "is_next": False, "masked": []},
    ]
    b = bert_data.collate(ex)
    assert b["ids"].tolist() == [[2, 7, 3], [2, 3, 0]]
    # no masked position in the batch: still integer index tensors (torch.tensor([]) alone would be float)
    assert b["mlm_pos"].dtype == b["mlm_labels"].dtype == torch.long and b["mlm_pos"].numel() == 0
    assert b["ids"].view(-1)[b["mlm_pos"]].numel() == 0
