"""Tiny random Hugging Face Transformers models for the tests (no network): a config with 2 layers, 2 heads and hidden
32, random weights, and a tokenizer trained on a few lines with the `tokenizers` library, saved with
save_pretrained(safe_serialization=True) into a folder, as Transformers' own tests build theirs.

    zh_bert(dir)        Chinese character-level WordPiece BERT with an MLM head (nsp=True: BertForPreTraining)
    en_bert(dir)        English WordPiece BERT where "riverbank" and "playing" split into several pieces
    gpt2(dir)           GPT-2 with a byte-level BPE trained on English and a little Chinese
"""

from __future__ import annotations

from pathlib import Path

ZH_LINES = [
    "我买了一个苹果手机。",
    "他在吃一个红苹果。",
    "今天天气很好，我们去公园吧。",
    "手机没电了，请帮我充电。",
    "老师说这本书很有意思。",
    "苹果树上结满了果子。",
]
EN_LINES = [
    "the river bank is green and the bank is open",
    "we are playing near the river",
    "she plays and he played",
    "a bank by the river",
    "the cat sat on the mat",
]
EN_WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "river",
    "bank",
    "is",
    "green",
    "and",
    "open",
    "we",
    "are",
    "play",
    "##ing",
    "##s",
    "##ed",
    "near",
    "she",
    "he",
    "a",
    "by",
    "cat",
    "sat",
    "on",
    "mat",
    "##bank",
    "r",
    "##i",
    "##v",
    "##e",
    "##r",
    "##b",
    "##a",
    "##n",
    "##k",
    "p",
    "##l",
    "##y",
    ".",
    ",",
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SMALL = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
}


def wordpiece(vocab: list[str], max_len: int = 64):
    """A BERT-style WordPiece fast tokenizer over `vocab` (its [CLS]/[SEP]/[PAD]/[MASK]/[UNK]); also bench/hf_speed.py's."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab.index("[CLS]")), ("[SEP]", vocab.index("[SEP]"))],
    )
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_len,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


def _save(model, tokenizer, out: Path, readme: str | None = None) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    if readme is not None:
        (out / "README.md").write_text(readme, encoding="utf-8")
    return out


def zh_bert(out, nsp: bool = False, seed: int = 0) -> Path:
    """A character-level Chinese BERT: every CJK character of ZH_LINES (苹果, 手机 included) is one vocabulary entry."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertForPreTraining

    chars = sorted({c for line in ZH_LINES for c in line})
    vocab = SPECIALS + chars
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(vocab), **SMALL)
    model = (BertForPreTraining if nsp else BertForMaskedLM)(cfg).eval()
    return _save(
        model, wordpiece(vocab), out, "---\nlicense: apache-2.0\nlanguage: zh\n---\n# tiny zh bert (ctxlab test)\n"
    )


def en_bert(out, seed: int = 1) -> Path:
    """An English WordPiece BERT: "riverbank" -> river ##bank, "playing" -> play ##ing."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    model = BertForMaskedLM(BertConfig(vocab_size=len(EN_WORDS), **SMALL)).eval()
    return _save(model, wordpiece(EN_WORDS), out)


def gpt2(out, seed: int = 2, trim_offsets: bool = True) -> Path:
    """A GPT-2 with a byte-level BPE trained on EN_LINES and ZH_LINES (vocab ~300). `trim_offsets=False`: a piece's
    span includes its leading space (" river" -> (3, 9)), as some released byte-level tokenizers give."""
    import torch
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=trim_offsets)
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(EN_LINES * 3 + ZH_LINES, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=64,
    )
    torch.manual_seed(seed)
    cfg = GPT2Config(
        vocab_size=tok.get_vocab_size(), n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    return _save(GPT2LMHeadModel(cfg).eval(), fast, out)


class NotATensor:
    """An object a weights-only unpickler refuses: a .bin holding one needs unsafe unpickling."""

    def __init__(self):
        self.note = "ctxlab test object"
