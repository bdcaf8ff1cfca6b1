"""Opening a Hugging Face Transformers checkpoint safely, for ctxlib.models.hf: find the folder (a local folder saved
with save_pretrained, or a hub name already in the Hugging Face cache), decide the model's family from its config,
check the weights without unsafe unpickling, and load the tokenizer and model.

Rules: `trust_remote_code` is always False; safetensors are preferred; a pytorch_model.bin is read only with
weights-only unpickling; nothing is downloaded unless asked (`download=True` or CTXLAB_ALLOW_DOWNLOAD=1).
`transformers` and `huggingface_hub` are imported inside the functions, so importing ctxlib does not import them.
Every failure is an HfModelError: one line saying what is wrong and what to do.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..checkpoint import CheckpointError

ALLOW_DOWNLOAD_ENV = "CTXLAB_ALLOW_DOWNLOAD"  # "1": a hub name not in the cache is downloaded once
ALLOW_PATTERNS = [
    "config.json",
    "generation_config.json",
    "*.safetensors",
    "*.safetensors.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "README.md",
]
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
)
NSP_KEY = "seq_relationship"  # BERT's next-sentence head: cls.seq_relationship.weight


class HfModelError(CheckpointError):
    """A Transformers checkpoint ctxlab cannot use; the message is one line: what is wrong and what to do."""


def allow_download(download: bool = False) -> bool:
    return bool(download) or os.environ.get(ALLOW_DOWNLOAD_ENV) == "1"


def _short(e: BaseException) -> str:
    line = next((s.strip() for s in str(e).splitlines() if s.strip()), "").split(". ")[0]  # its first sentence
    line = line if len(line) <= 140 else line[:140] + "…"
    return f"{type(e).__name__}: {line}" if line else type(e).__name__


def resolve(spec: str, download: bool = False) -> tuple[Path, str, str]:
    """(folder, source, name) for `spec`: an existing folder, or a hub name found in (or, when allowed, fetched into)
    the Hugging Face cache."""
    spec = (spec or "").strip()
    if not spec:
        raise HfModelError("No model given after 'hf:'. Write hf:PATH (a saved folder) or hf:NAME (a hub model).")
    p = Path(spec).expanduser()
    if p.is_dir():
        return p.resolve(), str(p.resolve()), p.name
    if p.exists() or spec.startswith(("/", ".", "~")) or os.sep + os.sep in spec or spec.count("/") > 1:
        raise HfModelError(
            f"{spec} is not a folder. Give a folder saved with save_pretrained (config.json, "
            "weights, tokenizer files) or a hub name such as bert-base-chinese."
        )
    allowed = allow_download(download)
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(spec, allow_patterns=ALLOW_PATTERNS, local_files_only=not allowed)
    except Exception as e:  # an I/O boundary: no cache entry, offline, bad name, network or HTTP errors
        if not allowed:
            raise HfModelError(
                f"{spec} is not in the Hugging Face cache and downloads are off ({_short(e)}). Fetch it "
                f"once with ctxlib.models.hf.download('{spec}', DIR) and load hf:DIR, or set "
                f"{ALLOW_DOWNLOAD_ENV}=1."
            ) from e
        raise HfModelError(
            f"Could not download {spec} ({_short(e)}). Check the name and the network, or load a "
            "saved folder with hf:DIR."
        ) from e
    return Path(folder), spec, spec


def download(name: str, out_dir) -> Path:
    """Fetch hub model `name` once into `out_dir` (config, safetensors weights, tokenizer files, README.md); returns
    the folder, loadable as hf:out_dir. HfModelError (one line) when offline or the name is unknown."""
    out = Path(out_dir)
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(name, allow_patterns=ALLOW_PATTERNS, local_dir=out)
    except Exception as e:  # offline, unknown repository, network or disk errors
        raise HfModelError(
            f"Could not download {name} into {out} ({_short(e)}). Check the name and the network "
            "(HF_HUB_OFFLINE must not be 1), or copy a saved folder there."
        ) from e
    if not (out / "config.json").is_file():
        raise HfModelError(f"{name} has no config.json on the hub; it is not a Transformers model ctxlab can load.")
    return out


def read_config(folder: Path) -> dict:
    f = folder / "config.json"
    try:
        cfg = json.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise HfModelError(
            f"{f} is missing. Save the model with save_pretrained(folder) (it writes config.json)."
        ) from e
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise HfModelError(f"{f} is corrupt ({_short(e)}). Save the model again with save_pretrained.") from e
    if not isinstance(cfg, dict) or not cfg.get("model_type"):
        raise HfModelError(
            f"{f} has no model_type; it is not a Transformers config. Save the model with save_pretrained."
        )
    return cfg


def family_of(cfg: dict, folder: Path) -> str:
    """ "masked", "causal" or "encoder", from config.architectures, else model_type; HfModelError when unsupported."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        MODEL_MAPPING_NAMES,
    )

    mt, archs = cfg["model_type"], [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
    if cfg.get("is_encoder_decoder") or mt not in MODEL_MAPPING_NAMES:
        raise HfModelError(
            f"{folder}: architecture {(archs or [mt])[0]} (model_type {mt}) is not supported; ctxlab "
            "takes encoder models (BERT-like, masked LM) and decoder-only language models (GPT-like)."
        )
    for a in archs:
        if a.endswith("ForMaskedLM") or (
            a.endswith("ForPreTraining") and mt in MODEL_FOR_MASKED_LM_MAPPING_NAMES and mt != "electra"
        ):  # ELECTRA's pre-training head is a discriminator
            return "masked"
        if a.endswith(("ForCausalLM", "LMHeadModel")) and mt in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            return "causal"
    if archs:
        return "encoder"  # a bare model or a task head: vectors and attention only
    if mt in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "masked"
    return "causal" if mt in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES else "encoder"


def weight_files(folder: Path) -> tuple[list[Path], bool]:
    """(weight files, safetensors?): the .safetensors files when any, else the pytorch_model*.bin files."""
    st = sorted(folder.glob("*.safetensors"))
    if st:
        return st, True
    bins = sorted(folder.glob("pytorch_model*.bin"))
    if not bins:
        raise HfModelError(
            f"{folder} has no weights (model.safetensors or pytorch_model.bin). Save the model with "
            "save_pretrained(folder, safe_serialization=True)."
        )
    return bins, False


def weight_keys(files: list[Path], safetensors: bool) -> set[str]:
    """The parameter names in the weight files, read without unsafe unpickling (a .bin: torch's weights-only
    loader, which refuses arbitrary objects)."""
    keys: set[str] = set()
    for f in files:
        if safetensors:
            try:
                from safetensors import safe_open

                with safe_open(str(f), framework="pt") as h:
                    keys.update(h.keys())
            except Exception as e:  # safetensors raises its own SafetensorError on a bad header
                raise HfModelError(f"{f} is corrupt ({_short(e)}). Save or download the model again.") from e
            continue
        import pickle

        import torch

        try:
            sd = torch.load(f, map_location="cpu", weights_only=True, mmap=True)
        except pickle.UnpicklingError as e:
            raise HfModelError(
                f"{f} holds Python objects besides tensors and would need unsafe unpickling; ctxlab "
                "refuses it. Convert the weights to safetensors (save_pretrained(folder, "
                "safe_serialization=True) where you trust the file)."
            ) from e
        except (OSError, RuntimeError, EOFError, ValueError) as e:
            raise HfModelError(f"{f} is corrupt or not a state dict ({_short(e)}). Save the model again.") from e
        if not isinstance(sd, dict):
            raise HfModelError(f"{f} is not a state dict. Save the model again with save_pretrained.")
        keys.update(str(k) for k in sd)
    return keys


def load_tokenizer(folder: Path):
    """The folder's fast tokenizer (offsets need one)."""
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise HfModelError(
            f"{folder} has no tokenizer (tokenizer.json or vocab files). Save it next to the model "
            "with tokenizer.save_pretrained(folder)."
        )
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except Exception as e:  # transformers raises OSError, ValueError, KeyError ... for unreadable tokenizer files
        raise HfModelError(
            f"{folder}: the tokenizer does not load ({_short(e)}). Save it again with "
            "tokenizer.save_pretrained(folder)."
        ) from e
    if not getattr(tok, "is_fast", False) or not hasattr(tok, "backend_tokenizer"):
        raise HfModelError(
            f"{folder} has only a slow (Python) tokenizer, which gives no character offsets. Save a "
            "fast one: AutoTokenizer.from_pretrained(...).save_pretrained(folder) writes tokenizer.json."
        )
    return tok


def quiet() -> None:
    """No progress bars or warnings from Transformers on the terminal: a command prints its own one line."""
    from transformers.utils import logging as tr_logging

    tr_logging.set_verbosity_error()
    tr_logging.disable_progress_bar()


def load_model(folder: Path, family: str, has_nsp: bool, safetensors: bool, model_type: str):
    """The model in eval mode, float32, eager attention (so attention maps are returned)."""
    import torch
    import transformers as tr

    quiet()
    kw = {
        "local_files_only": True,
        "use_safetensors": safetensors,
        "weights_only": True,
        "attn_implementation": "eager",
        "dtype": torch.float32,
    }
    if has_nsp and model_type == "bert":
        cls = tr.BertForPreTraining  # a concrete class never runs remote code
    else:
        cls = {"masked": tr.AutoModelForMaskedLM, "causal": tr.AutoModelForCausalLM, "encoder": tr.AutoModel}[family]
        kw["trust_remote_code"] = False
    try:
        model = cls.from_pretrained(folder, **kw)
    except Exception as e:  # transformers raises OSError / ValueError / RuntimeError for bad or mismatched weights
        raise HfModelError(
            f"{folder}: the model does not load ({_short(e)}). Check that the weights match "
            "config.json, or save the model again."
        ) from e
    return model.eval()


def read_license(folder: Path) -> str | None:
    """`license:` from README.md's YAML front matter, or None."""
    try:
        text = (folder / "README.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.match(r"\ufeff?---\s*\n(.*?)\n---", text, re.DOTALL)
    if not m:
        return None
    lic = re.search(r"^license:\s*['\"]?([^'\"\n#]+?)['\"]?\s*$", m.group(1), re.MULTILINE)
    return lic.group(1).strip() if lic else None


def byte_chars() -> dict[int, str]:
    """GPT-2's byte -> printable character map (byte-level BPE writes every byte as one of these)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + len(cs) - 188)
    return dict(zip(bs, map(chr, cs)))
