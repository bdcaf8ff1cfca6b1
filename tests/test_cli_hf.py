"""The command line on equal terms for Transformers models (tiny ones built here, no network): embed, fill-mask,
generate, info, eval --task senses|cloze and download; bad models exit 2 with one line."""

import json

import hf_tiny
import numpy as np
import pytest

from ctxlib import registered
from ctxlib.cli import main


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_hf")
    return {"zh": hf_tiny.zh_bert(root / "zh"), "gpt2": hf_tiny.gpt2(root / "gpt2"), "en": hf_tiny.en_bert(root / "en")}


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    return err


def test_embed_writes_every_layer(models, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("我买了苹果手机\n苹果真好吃\n", encoding="utf-8")
    out = tmp_path / "v.npz"
    assert (
        main(["embed", "--model", f"hf:{models['zh']}", "--word", "苹果", "--input", str(src), "--out", str(out)]) == 0
    )
    z = np.load(out)
    assert z["vectors"].shape == (2, 3, 32) and list(z["layer_names"]) == ["embeddings", "layer 1", "layer 2"]


def test_fill_mask_and_generate_by_family(models, capsys):
    assert main(["fill-mask", "我买了[MASK]果手[MASK]", "--model", f"hf:{models['zh']}", "--topk", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out) == 2 and all(len(r["candidates"]) == 3 for r in out)
    assert main(["generate", "the cat", "--model", f"hf:{models['gpt2']}", "--max-new", "5", "--seed", "1"]) == 0
    first = capsys.readouterr().out
    assert main(["generate", "the cat", "--model", f"hf:{models['gpt2']}", "--max-new", "5", "--seed", "1"]) == 0
    assert capsys.readouterr().out == first  # the same seed writes the same text
    assert main(["fill-mask", "the [MASK] sat", "--model", f"hf:{models['gpt2']}"]) == 2
    assert "is a causal Transformers model; fill-mask needs a BERT model" in _one_line_error(capsys)
    assert main(["generate", "the cat", "--model", f"hf:{models['zh']}"]) == 2
    assert "is a masked Transformers model" in _one_line_error(capsys)


def test_info_one_model_and_the_registered_list(models, monkeypatch, tmp_path, capsys):
    assert main(["info", f"hf:{models['en']}", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert (r["family"], r["language"], r["kind"]) == ("masked", "en", "hf") and r["n_params"] > 0
    monkeypatch.setenv(registered.ENV, f"hf:{models['zh']},hf:{tmp_path / 'missing'}")
    monkeypatch.setenv(registered.FILE_ENV, str(tmp_path / "none.toml"))
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "registered models" in out and "family=masked" in out and "missing     ERROR" not in out
    assert any(line.strip().startswith("missing") and "ERROR" in line for line in out.splitlines())


def test_eval_writes_outside_checkpoints(models, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(registered.EVALS_ENV, str(tmp_path / "evals"))
    assert main(["eval", f"hf:{models['en']}", "--task", "senses"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert list(res["sets"]) == ["english"]  # an English model: the English sentences
    assert (tmp_path / "evals" / "en" / "eval_senses.json").is_file()
    assert main(["eval", f"hf:{models['en']}", "--task", "cloze"]) == 2
    assert "the cloze set is Chinese" in _one_line_error(capsys)
    assert main(["eval", f"hf:{models['gpt2']}", "--task", "pos"]) == 2
    assert "--task senses or cloze" in _one_line_error(capsys)


@pytest.mark.parametrize("make", ["no_tokenizer", "unsupported", "pickle", "offline"])
def test_bad_models_exit_2_with_one_line(models, tmp_path, monkeypatch, capsys, make):
    import shutil

    d = tmp_path / make
    if make == "no_tokenizer":
        shutil.copytree(models["zh"], d)
        for f in d.glob("*token*"):
            f.unlink()
        (d / "vocab.txt").unlink(missing_ok=True)
    elif make == "unsupported":
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"model_type": "no_such_arch", "architectures": ["NoSuch"]}))
    elif make == "pickle":
        shutil.copytree(models["zh"], d)
        (d / "model.safetensors").unlink()
        (d / "pytorch_model.bin").write_bytes(b"\x80\x04cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.")
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        d = "nobody-here/no-such-model-ctxlab"
    assert main(["info", f"hf:{d}"]) == 2
    _one_line_error(capsys)
    src = tmp_path / "in.txt"
    src.write_text("x y\n", encoding="utf-8")
    assert (
        main(["embed", "--model", f"hf:{d}", "--word", "x", "--input", str(src), "--out", str(tmp_path / "o.npz")]) == 2
    )
    _one_line_error(capsys)
    assert not (tmp_path / "o.npz").exists()


def test_download_refuses_to_overwrite_and_fails_cleanly_offline(models, tmp_path, monkeypatch, capsys):
    assert main(["download", "bert-base-chinese", str(models["zh"])]) == 2
    assert "already holds a model" in _one_line_error(capsys)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["download", "nobody-here/no-such-model-ctxlab", str(tmp_path / "new")]) == 2
    assert "Could not download" in _one_line_error(capsys)
