"""Evaluation: task heads on frozen features (`tasks`), BERT's sentiment fine-tuning (`finetune`) and the frozen
held-out sense and cloze sets (`heldout`)."""
