"""Training: the model-agnostic Trainer, a run's folder, resume state and timeline, and each model's presets (one
`Preset` shape, in `presets`) and `train()` (`bert`, `elmo`, `word2vec`, with BERT's pre-training data in `bert_data`)."""
