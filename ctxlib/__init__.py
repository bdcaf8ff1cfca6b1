"""ctxlib: small word2vec, ELMo and BERT models on a Chinese corpus, one interface for all.

import ctxlib
enc = ctxlib.load("bert")
out = enc.encode(["苹果手机很好用"])[0]   # out.tokens, out.spans, out.layers, out.attentions
enc.word_vectors(texts, "苹果")           # (n_texts, n_layers, dim)
"""

from .checkpoint import CheckpointError, available
from .encoder import Encoded, Encoder, OutOfVocabulary, WordNotFound, load
from .vecmath import cosine

__all__ = ["load", "available", "Encoder", "Encoded", "CheckpointError", "WordNotFound", "OutOfVocabulary", "cosine"]
__version__ = "0.1.0"
