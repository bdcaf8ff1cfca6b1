"""The models: each one's configuration, network and the Encoder the app reads it through (no training code).

`bert`, `bert_encoder`, `gpt` (BERT's network with causal=True), `elmo`, `word2vec`, and `scalar_mix` (ELMo's
learned layer mix, used by the task heads).
"""
