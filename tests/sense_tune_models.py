"""Models and data for the sense-tuning tests (test_sense_tune_units.py, test_sense_tune_record.py): a 2-layer BERT of
width 16 and a 2-layer ELMo of width 8 with random weights, built and saved in well under a second, and the supplement
rows they tune on."""

from dataclasses import asdict
from types import SimpleNamespace

import torch

# paid once when the tests are collected, not in every test process (mutmut forks one per mutant after collection):
# the optimizer's first use imports torch._dynamo (~3 s), the ELMo side's first segmentation loads jieba (~1.5 s)
import torch._dynamo  # noqa: F401

from ctxlib import checkpoint, corpus
from ctxlib.tokens import segment

segment("苹果")
PARS = corpus.load("reviews", "train")[:12]

# three words: two with two senses, one with one (not tuned on); written for this test
_CTX = {
    ("苹果", "fruit"): ["我买了红苹果", "这个苹果很甜", "苹果树结果了"],
    ("苹果", "brand"): ["苹果公司发布手机", "我的苹果电脑坏了", "他买苹果手机"],
    ("小米", "grain"): ["早上喝小米粥", "地里小米熟了", "小米和红枣一起煮"],
    ("小米", "brand"): ["小米手机卖得好", "我用小米充电器", "小米公司在北京"],
    ("意思", "meaning"): ["这是什么意思", "意思很清楚"],
}


def rows(ctx=_CTX):
    return [SimpleNamespace(sentence=t, word=w, sense=s, split="train") for (w, s), ts in ctx.items() for t in ts]


def bert(tmp_path, pars, layers=2, summary=None, max_len=40):
    from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer

    torch.manual_seed(0)
    tok = CharTokenizer.build(list(pars) + [SimpleNamespace(text=r.sentence) for r in rows()], min_count=1)
    model = BertModel(BertConfig(vocab_size=len(tok), hidden=16, layers=layers, heads=2, ffn=32, max_len=max_len))
    src = tmp_path / f"bert{layers}"
    checkpoint.save(src, "bert", model.cfg.to_json(), tok.vocab.to_json(), model.state_dict(), summary or {"x": 1})
    return src


def elmo(tmp_path, pars, summary=None):
    from ctxlib.models.elmo import ElmoConfig, ElmoLM
    from ctxlib.training.elmo import build_vocabs, paragraph_sentences

    torch.manual_seed(0)
    sents = paragraph_sentences(pars, 50) + [[r.word] for r in rows()]
    cfg = ElmoConfig(filters=[[1, 4], [2, 4]], max_chars=6, dim=8, hidden=12, vocab_size=10**6, cutoffs=[])
    wv, cv = build_vocabs(sents, cfg, char_min_count=1)
    cfg.n_chars, cfg.vocab_size, cfg.softmax = len(cv), len(wv), "full"
    model = ElmoLM(cfg)
    src = tmp_path / "elmo"
    vocab = {"words": wv.to_json(), "chars": cv.to_json()}
    checkpoint.save(src, "elmo", asdict(cfg), vocab, model.state_dict(), summary or {"perplexity": {"forward": 9}})
    return src
