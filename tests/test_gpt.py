"""GPT (BERT's network with causal=True): causality, attention, training, save/load, generation, the CLI."""

import json

import numpy as np
import pytest
import torch

import ctxlib
from ctxlib import checkpoint, corpus, lexicon
from ctxlib.cli import main
from ctxlib.models.bert import BertConfig, BertModel
from ctxlib.models.bert_encoder import BertEncoder
from ctxlib.models.gpt import GptEncoder
from ctxlib.training import gpt


@pytest.fixture(scope="module")
def pars():
    ps = corpus.load("all", "train")
    rng = np.random.default_rng(0)
    return [ps[i] for i in sorted(rng.permutation(len(ps))[:300])]


@pytest.fixture(scope="module")
def trained(pars, tmp_path_factory, one_thread):
    return gpt.train(preset="tiny", device="cpu", out=tmp_path_factory.mktemp("gpt") / "tiny", seed=0, paragraphs=pars)


@pytest.fixture(scope="module")
def enc(trained):
    return ctxlib.load(trained)


def _model(causal=True, **kw):
    torch.manual_seed(0)
    return BertModel(
        BertConfig(vocab_size=50, hidden=32, layers=2, heads=4, ffn=64, max_len=16, causal=causal, **kw)
    ).eval()


def test_causal_flag_drops_segments_and_nsp_and_keeps_bert_as_it_was():
    bert, g = _model(False).state_dict(), _model(True).state_dict()
    assert {k for k in bert if k.startswith(("seg_emb", "pooler", "nsp_head"))} and set(g) < set(bert)
    assert set(bert) - set(g) == {"seg_emb.weight", "pooler.weight", "pooler.bias", "nsp_head.weight", "nsp_head.bias"}
    assert (
        "causal" not in BertConfig(vocab_size=50).to_json()
        and BertConfig(vocab_size=50, causal=True).to_json()["causal"]
    )


@pytest.mark.parametrize("positions", ["absolute", "rope"])
def test_attention_is_zero_above_the_diagonal_and_fused_matches_explicit(positions):
    m = _model(positions=positions)
    ids = torch.tensor([[2, 7, 8, 9, 10, 11], [2, 12, 13, 0, 0, 0]])  # second row padded
    with torch.no_grad():
        layers, atts = m(ids, need_weights=True, all_layers=True)
        fused, _ = m(ids, all_layers=True)
    upper = torch.ones(6, 6, dtype=torch.bool).triu(1)
    for a in atts:  # (B, H, T, T)
        assert float(a[:, :, upper].abs().max()) == 0.0
        assert float(a[1, :, :, 3:].abs().max()) == 0.0  # [PAD] is never attended to
        assert torch.allclose(a[0].sum(-1), torch.ones(4, 6), atol=1e-6)
        assert torch.allclose(a[1, :, :3].sum(-1), torch.ones(4, 3), atol=1e-6)
    for x, y in zip(fused, layers):
        assert torch.allclose(x[0], y[0], atol=1e-5) and torch.allclose(x[1, :3], y[1, :3], atol=1e-5)


def test_packed_lm_loss_matches_the_padded_forward():
    m = _model()
    ids = torch.tensor([[2, 7, 8, 9, 10, 11], [2, 12, 13, 0, 0, 0]])
    labels = torch.tensor([[7, 8, 9, 10, 11, 12], [12, 13, 14, -100, -100, -100]])
    with torch.no_grad():
        loss, n = m.loss({"ids": ids, "labels": labels})
        (h,), _ = m(ids)
        ref = torch.nn.functional.cross_entropy(m.mlm_logits(h.reshape(-1, 32)), labels.reshape(-1), ignore_index=-100)
    assert n == 9 and abs(float(loss) - float(ref)) < 1e-5


def test_dense_and_packed_lm_loss_agree_on_well_filled_batches():
    """Batches with little padding skip the packing (DENSE_SHARE) and use SDPA's causal kernel: the same loss as
    the packed path and as the explicit masked attention."""
    from ctxlib.models import bert as bert_model

    m = _model()
    ids = torch.tensor([[2, 7, 8, 9, 10, 11, 12, 13], [2, 12, 13, 14, 15, 16, 17, 0]])  # 15 of 16 real
    labels = torch.tensor([[7, 8, 9, 10, 11, 12, 13, 14], [12, 13, 14, 15, 16, 17, 18, -100]])
    assert float((ids != 0).float().mean()) >= bert_model.DENSE_SHARE
    with torch.no_grad():
        dense, n = m.loss({"ids": ids, "labels": labels})
        packed_h, _ = m.forward_packed(ids)
        packed = torch.nn.functional.cross_entropy(m.mlm_logits(packed_h), labels.reshape(-1)[ids.reshape(-1) != 0])
        layers, _ = m(ids, need_weights=True)  # the explicit path: a (B, 1, T, T) mask, no fused kernel
        ref = torch.nn.functional.cross_entropy(
            m.mlm_logits(layers[-1].reshape(-1, 32)), labels.reshape(-1), ignore_index=-100
        )
    assert n == 15 and abs(float(dense) - float(packed)) < 1e-5 and abs(float(dense) - float(ref)) < 1e-5


def test_changing_a_later_character_leaves_earlier_positions_unchanged(enc):
    a, b = enc.encode(["苹果手机很好用", "苹果手机很难用"])
    assert a.tokens[0] == "[CLS]" and a.tokens[1:] == list("苹果手机很好用") and "[SEP]" not in a.tokens
    for j in range(a.layers.shape[0]):  # [CLS] 苹 果 手 机 很 come before the change (index 6)
        assert np.array_equal(a.layers[j, :6], b.layers[j, :6]), j
    assert not np.allclose(a.layers[-1, 6], b.layers[-1, 6])
    A = a.attentions  # (L, H, T, T)
    assert A.shape == (enc.model.cfg.layers, enc.model.cfg.heads, 8, 8)
    assert np.all(A[:, :, np.triu(np.ones((8, 8), bool), 1)] == 0.0) and np.allclose(A.sum(-1), 1.0, atol=1e-5)


def test_encoder_interface(enc):
    assert isinstance(enc, GptEncoder) and enc.kind == "gpt" and not enc.word_level
    assert enc.layer_names == ["embeddings", "layer 1", "layer 2"]
    assert not hasattr(enc, "fill_mask") and not hasattr(enc, "next_sentence")
    assert enc.word_vectors(["苹果真好吃", "苹果手机很好用"], "苹果").shape == (2, 3, enc.dim)
    words, m = enc.type_matrix(50)
    assert len(words) == 50 and m.shape == (50, 3, enc.dim) and enc.in_vocab("苹果")
    cap = enc.model.cfg.max_len - 1
    e = enc.encode(["好" * (cap + 5), "好" * cap])
    assert e[0].truncated and not e[1].truncated and len(e[0].tokens) == len(e[1].tokens) == cap + 1


def test_tiny_model_loss_falls_and_summary_has_bits_per_char(trained, enc):
    tok = enc.tokenizer
    valid = corpus.load("corpora", "valid")[:200]
    fresh = gpt.build_model(tok, gpt.PRESETS["tiny"].model, seed=0)
    before, after = (gpt.evaluate_lm(m, tok, valid)["bits_per_char"] for m in (fresh, enc.model))
    assert after < before - 1.0, (before, after)
    s = checkpoint.read_config(trained)["summary"]
    assert s["steps"] == gpt.PRESETS["tiny"].steps and s["finished"] and s["tokens_seen"] > 0
    v = s["valid"]
    assert (
        0 < v["bits_per_char"] < before
        and abs(v["perplexity_per_char"] - 2 ** v["bits_per_char"]) < 0.01 * v["perplexity_per_char"]
    )


def test_save_load_round_trip(enc, trained, tmp_path):
    cfg, vocab, _ = checkpoint.load(trained)
    assert cfg["kind"] == "gpt" and cfg["config"]["causal"] is True
    checkpoint.save(tmp_path / "copy", "gpt", cfg["config"], vocab, enc.model.state_dict(), cfg["summary"])
    enc2 = ctxlib.load(tmp_path / "copy")
    x, y = enc.encode(["我们去公园吧"])[0], enc2.encode(["我们去公园吧"])[0]
    assert np.array_equal(x.layers, y.layers) and np.array_equal(x.attentions, y.attentions)
    checkpoint.save(tmp_path / "asbert", "bert", cfg["config"], vocab, enc.model.state_dict(), cfg["summary"])
    with pytest.raises(checkpoint.CheckpointError, match="causal"):
        ctxlib.load(tmp_path / "asbert")  # a causal model is not a BERT


def test_next_char_and_generation(enc):
    top = enc.next_char("今天天", topk=5)
    assert len(top) == 5 and all(p2 <= p1 for (_, p1), (_, p2) in zip(top, top[1:])) and sum(p for _, p in top) <= 1
    g = enc.generate("今天天气", max_new=12, seed=0)
    assert g == enc.generate("今天天气", max_new=12, seed=0)
    assert g["text"] != enc.generate("今天天气", max_new=12, seed=1)["text"]
    assert g["text"] == "今天天气" + g["generated"] and len(g["steps"]) == 12
    assert "".join(s["char"] for s in g["steps"]) == g["generated"]
    for s in g["steps"]:
        assert len(s["candidates"]) == 5 and 0 < s["prob"] <= 1 and 0 < s["sample_prob"] <= 1
        assert not any(c.startswith("[") for c, _ in s["candidates"])
    long = enc.generate("好", max_new=enc.model.cfg.max_len + 3, top_k=1)  # the context slides past max_len
    assert len(long["steps"]) == enc.model.cfg.max_len + 3


def test_batches_resume_exactly_and_shard_by_rank(enc, pars):
    docs = gpt.encode_documents(pars, enc.tokenizer)
    b = gpt.GptBatches(docs, enc.tokenizer.cls_id, 8, 64, seed=0)
    it = iter(b)
    for _ in range(5):
        next(it)
    state = b.state_dict()
    want = [next(it) for _ in range(3)]
    b2 = gpt.GptBatches(docs, enc.tokenizer.cls_id, 8, 64, seed=0)
    b2.load_state_dict(state)
    got = [x for _, x in zip(range(3), b2)]
    for x, y in zip(want, got):
        assert torch.equal(x["ids"], y["ids"]) and torch.equal(x["labels"], y["labels"])
    x = want[0]
    real = x["ids"] != 0
    assert torch.equal(x["ids"][:, 1:][real[:, 1:]], x["labels"][:, :-1][real[:, 1:]])  # labels = ids shifted by one
    plans = [gpt.GptBatches(docs, enc.tokenizer.cls_id, 8, 64, seed=0, rank=r, world=2)._plan() for r in (0, 1)]
    seen = [set(np.concatenate(p).tolist()) for p in plans]
    assert not seen[0] & seen[1]


def _cli(args, capsys):
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err.strip()


def test_cli_generate(trained, capsys):
    rc, out, _ = _cli(["generate", "--model", str(trained), "今天天气", "--max-new", "8"], capsys)
    assert rc == 0 and out.startswith("今天天气") and len(out.strip()) == 12
    rc, out, _ = _cli(["generate", "--model", str(trained), "今天天气", "--max-new", "3", "--json"], capsys)
    assert rc == 0 and len(json.loads(out)["steps"]) == 3


def test_cli_generate_bad_inputs_exit_2_with_one_line(trained, enc, tmp_path, capsys):
    cfg, vocab, _ = checkpoint.load(trained)
    bert_kw = {k: v for k, v in cfg["config"].items() if k != "causal"}
    bert = BertModel(BertConfig(**bert_kw))
    checkpoint.save(tmp_path / "bert", "bert", bert_kw, vocab, bert.state_dict(), {})
    assert isinstance(ctxlib.load(tmp_path / "bert"), BertEncoder)
    cap = enc.model.cfg.max_len - 1
    for args, pattern in [
        (["  "], "empty"),
        (["好" * (cap + 1)], "at most"),
        (["龘靐"], "vocabulary"),
        (["今天", "--temperature", "0"], "temperature"),
        (["今天", "--top-k", "0"], "top-k"),
        (["今天", "--model", str(tmp_path / "bert")], "needs a GPT model"),
        (["今天", "--model", str(tmp_path / "none")], "No checkpoint"),
    ]:
        if "--model" not in args:
            args = args + ["--model", str(trained)]
        rc, out, err = _cli(["generate"] + args, capsys)
        assert rc == 2 and not out and len(err.splitlines()) == 1 and err.startswith("error: ") and pattern in err, (
            args,
            err,
        )


def test_cli_embed_works_for_gpt(trained, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("苹果真好吃\n苹果手机很好用\n", encoding="utf-8")
    rc, _, _ = _cli(
        ["embed", "--model", str(trained), "--word", "苹果", "--input", str(src), "--out", str(tmp_path / "v.npz")],
        capsys,
    )
    assert rc == 0 and np.load(tmp_path / "v.npz")["vectors"].shape == (2, 3, 32)


def test_resume_continues_a_run(pars, tmp_path, one_thread):
    out = gpt.train(preset="tiny", out=tmp_path / "r", device="cpu", paragraphs=pars, steps=20)
    assert checkpoint.read_config(out)["summary"]["steps"] == 20
    gpt.train(preset="tiny", device="cpu", paragraphs=pars, resume=out, steps=30)
    s = checkpoint.read_config(out)["summary"]
    assert s["steps"] == 30 and s["finished"] and s["run"]["preset"] == "tiny"
    assert ctxlib.load(out).model.cfg.causal


def _trigrams(text: str) -> list[str]:
    return [text[i : i + 3] for i in range(len(text) - 2)]


def test_old_sampling_is_reachable_and_greedy_follows_next_char(enc):
    g = enc.generate("今天天气", max_new=20, top_k=1, repetition_penalty=1.0, no_repeat_ngram=0)
    text = "今天天气"
    for s in g["steps"]:  # top-1 without penalty or bans: the model's most likely character every time
        assert s["char"] == enc.next_char(text, topk=1)[0][0] and s["sample_prob"] == 1.0
        text += s["char"]


def test_no_repeat_ngram_never_repeats_a_trigram(enc):
    old = enc.generate("今天天气", max_new=60, top_k=1, repetition_penalty=1.0, no_repeat_ngram=0)["text"]
    assert len(set(_trigrams(old))) < len(_trigrams(old))  # the tiny model loops when left alone: the test can fail
    for t, seed in ((0.3, 0), (0.8, 1), (0.05, 2)):
        new = enc.generate("今天天气", max_new=60, temperature=t, seed=seed, repetition_penalty=1.0, no_repeat_ngram=3)
        assert len(set(_trigrams(new["text"]))) == len(_trigrams(new["text"])), new["text"]
        assert all(0 < s["prob"] <= 1 and 0 < s["sample_prob"] <= 1 for s in new["steps"])
    assert enc.generate("今天天气", max_new=8) == enc.generate(
        "今天天气", max_new=8, repetition_penalty=1.3, no_repeat_ngram=3
    )


def test_repetition_penalty_lowers_the_share_of_repeated_characters(enc):
    def repeats(rp):
        gen = [
            enc.generate("今天天气", max_new=40, temperature=0.5, seed=s, repetition_penalty=rp, no_repeat_ngram=0)[
                "generated"
            ]
            for s in range(3)
        ]
        return np.mean([1 - len(set(g)) / len(g) for g in gen])

    assert repeats(2.0) < repeats(1.0)


def test_banned_names_never_appear_in_the_written_text(enc):
    free = enc.generate("今天天气", max_new=40, top_k=1, repetition_penalty=1.0, no_repeat_ngram=0)["generated"]
    names = sorted(
        {free[i : i + n] for n in (2, 3) for i in range(0, len(free) - n, 5)}
        - {"今天", "天天", "天气", "今天天", "天天气"}
    )
    assert names and any(n in free for n in names)
    for t, seed in ((0.01, 0), (0.8, 1)):
        out = enc.generate(
            "今天天气",
            max_new=40,
            temperature=t,
            top_k=1 if t < 0.1 else 20,
            seed=seed,
            repetition_penalty=1.0,
            no_repeat_ngram=0,
            banned_names=names,
        )
        assert not [n for n in names if n in out["text"]], out["text"]


def test_cli_generate_settings_and_names(trained, enc, capsys):
    rc, out, err = _cli(
        [
            "generate",
            "--model",
            str(trained),
            "今天天气",
            "--max-new",
            "12",
            "--top-k",
            "1",
            "--repetition-penalty",
            "1.0",
            "--no-repeat-ngram",
            "0",
        ],
        capsys,
    )
    old = enc.generate("今天天气", max_new=12, top_k=1, repetition_penalty=1.0, no_repeat_ngram=0)["text"]
    assert rc == 0 and out.strip() == old and "trained on" in err and "parameters" in err
    rc, out, _ = _cli(["generate", "--model", str(trained), "今天天气", "--max-new", "12", "--seed", "3"], capsys)
    assert rc == 0 and out.strip() == enc.generate("今天天气", max_new=12, seed=3)["text"]  # same classroom defaults
    rc, out, _ = _cli(["generate", "--model", str(trained), "今天天气", "--max-new", "12", "--no-names"], capsys)
    assert rc == 0 and out.strip() == enc.generate("今天天气", max_new=12, banned_names=lexicon.person_names())["text"]
    for args, pattern in [
        (["--repetition-penalty", "0"], "--repetition-penalty"),
        (["--repetition-penalty", "nan"], "> 0"),
        (["--repetition-penalty", "1000"], "at most 100"),
        (["--no-repeat-ngram", "-1"], "--no-repeat-ngram"),
        (["--no-repeat-ngram", "99"], "--no-repeat-ngram"),
    ]:
        rc, out, err = _cli(["generate", "今天", "--model", str(trained)] + args, capsys)
        assert rc == 2 and not out and len(err.splitlines()) == 1 and pattern in err, (args, err)
