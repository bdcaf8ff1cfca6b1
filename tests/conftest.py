"""Shared fixtures: tiny word2vec and ELMo checkpoints, trained once per test session on a corpus slice."""

import sys

import pytest


@pytest.fixture(autouse=True)
def _keep_main_module():
    """Streamlit's script runner (AppTest) installs each page it runs as sys.modules["__main__"] and leaves it there;
    a later test that spawns processes (the DDP test) would then re-run that page in every child. Put pytest's back."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


@pytest.fixture(scope="session")
def w2v_tiny(tmp_path_factory):
    """Path of a tiny word2vec checkpoint (preset "tiny": dim 32, 2 epochs, ~2k sentences incl. all with 苹果)."""
    from ctxlib.training import word2vec

    return word2vec.train("tiny", device="cpu", out=tmp_path_factory.mktemp("ckpt") / "word2vec", seed=0)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models gain nothing from threads, and on a shared CPU two threads can be much slower."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def elmo_tiny(tmp_path_factory):
    """Path of a tiny ELMo checkpoint (preset "tiny", 300 People's Daily train paragraphs), trained on one thread."""
    import torch

    from ctxlib import corpus
    from ctxlib.training import elmo

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pars = corpus.load("pd", "train")[:300]
        return elmo.train("tiny", device="cpu", out=tmp_path_factory.mktemp("elmo") / "elmo", paragraphs=pars)
    finally:
        torch.set_num_threads(n)


@pytest.fixture(scope="session")
def tiny_bert():
    """An untrained tiny BERT encoder (hidden 32, 2 layers) with a character vocabulary from 500 training reviews:
    enough to run fine-tuning code paths (the fine-tuning job, its page) in seconds."""
    import torch

    from ctxlib import corpus
    from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer
    from ctxlib.models.bert_encoder import BertEncoder

    torch.manual_seed(0)
    tok = CharTokenizer.build(corpus.load("reviews", "train")[:500], min_count=1)
    model = BertModel(BertConfig(vocab_size=len(tok), hidden=32, layers=2, heads=2, ffn=64, max_len=80))
    return BertEncoder("tiny", {}, {}, None, model, tok)
