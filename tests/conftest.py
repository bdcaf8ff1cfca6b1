"""Shared fixtures: one tiny word2vec checkpoint per test session (trained in seconds on a corpus slice)."""
import pytest


@pytest.fixture(scope="session")
def w2v_tiny(tmp_path_factory):
    """Path of a tiny word2vec checkpoint (preset "tiny": dim 32, 2 epochs, ~2k sentences incl. all with 苹果)."""
    from ctxlib import word2vec

    return word2vec.train("tiny", device="cpu", out=tmp_path_factory.mktemp("ckpt") / "word2vec", seed=0)
