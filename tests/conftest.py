"""Shared fixtures: tiny word2vec and ELMo checkpoints, trained once per test session on a corpus slice."""

import functools
import sys

import pytest


def _scan_components_once() -> None:
    """Every new AppTest scans the metadata of every installed distribution for Streamlit components (0.2-0.8 s each:
    110 scans were 80 s of the 177 s of test_url_edges.py and test_state_mutants.py on a loaded machine). The installed
    packages do not change during a test run, so the scan runs once and its result is reused."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # another Streamlit: nothing to speed up
        return
    original = manifest_scanner.scan_component_manifests
    if getattr(original, "ctxlab_once", False):
        return
    found: dict = {}

    @functools.wraps(original)
    def once(*args, **kw):
        key = (args, tuple(sorted(kw.items())))
        if key not in found:
            found[key] = original(*args, **kw)
        return list(found[key])

    once.ctxlab_once = True
    manifest_scanner.scan_component_manifests = once


_scan_components_once()


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
