"""Sense-tuning (ctxlib.training.sense_tune) end to end on the small models of sense_tune_models.py, a few steps: the
summary it saves (the pre-training record kept, the held-out figures of the new weights, the command that reproduces
it), the timeline copied, and what it refuses. Part of the mutation scope's runner (bench/mutation.sh sense_tune)."""

import shlex
from types import SimpleNamespace

import pytest
import torch
from sense_tune_models import PARS, bert, elmo, rows

from ctxlib import checkpoint, corpus
from ctxlib.training import sense_tune as st


@pytest.fixture(scope="module")
def pars():
    return PARS


@pytest.fixture(scope="module")
def bert_src(tmp_path_factory, pars):
    return bert(tmp_path_factory.mktemp("b"), pars, summary={"steps": 7, "valid": {"mlm_acc": 0.5}})


@pytest.fixture(scope="module")
def elmo_src(tmp_path_factory, pars):
    return elmo(tmp_path_factory.mktemp("e"), pars)


def _fake_corpus(monkeypatch, pars):
    """corpus.load for a tune on the built-in corpus: the train split to tune on, the corpora's valid split to
    measure on; any other split is an error."""
    asked = []

    def load(source, split):
        asked.append((source, split))
        if (source, split) == ("all", "train"):
            return pars[:8]
        if (source, split) == ("corpora", "valid"):
            return pars[8:]
        raise AssertionError(f"the tune read {source}/{split}")

    monkeypatch.setattr(corpus, "load", load)
    return asked


def _spy(monkeypatch, module, name, calls, **fewer):
    """Records the calls of module.name and what they returned; `fewer`: keyword arguments to run it with (fewer
    examples, a faster test), the call's own recorded as made."""
    real = getattr(module, name)

    def spy(*a, **kw):
        calls.append((a, kw, real(*a, **{**kw, **fewer})))
        return calls[-1][2]

    monkeypatch.setattr(module, name, spy)


def test_bert_tune_saves_its_record_and_the_held_out_figures_of_the_new_weights(bert_src, tmp_path, pars, monkeypatch):
    from ctxlib.cli import build_parser
    from ctxlib.models.bert_encoder import BertEncoder
    from ctxlib.training import bert

    (bert_src / "timeline.json").write_text("{}", encoding="utf-8")
    asked, evals, seen = _fake_corpus(monkeypatch, pars), [], []
    _spy(monkeypatch, bert, "evaluate_pretraining", evals, n=40)
    cfg = st.SenseTuneConfig(steps=3, lr=1e-3, warmup=1, words=2, per_word=4, mlm_batch=2, layers=(1,))
    out = st.sense_tune(
        bert_src,
        tmp_path / "o" / "t",
        cfg,
        seed=4,
        rows=rows(),
        exclude=["意思", "意思"],
        callback=lambda s, lv: seen.append((s, lv)),
    )
    assert out == tmp_path / "o" / "t" and (out / "timeline.json").is_file()
    assert asked == [("all", "train"), ("corpora", "valid")]
    enc = BertEncoder.from_checkpoint(out)
    assert checkpoint.read_config(out)["kind"] == "bert"  # what the app picks the loader by
    assert enc.summary["steps"] == 7  # the pre-training record kept
    (model, tok, held), kw, figures = evals[0]
    assert held == pars[8:] and kw == {"n": 2000} and figures["n_examples"] == 40
    assert enc.summary["valid"] == figures and figures != {"mlm_acc": 0.5}
    sd = checkpoint.load(out)[2]
    assert all(torch.equal(sd[k], v.detach().half().float()) for k, v in model.state_dict().items())  # the weights
    t = enc.summary["sense_tune"]
    assert t["before"] == {"valid": {"mlm_acc": 0.5}} and t["from"] == str(bert_src) and t["seed"] == 4
    assert t["config"] == {**{k: getattr(cfg, k) for k in t["config"]}, "layers": [1]} and len(t["config"]) == 12
    assert t["words"] == 2 and t["sentences"] == 12 and t["excluded"] == ["意思"]
    assert "train split" in t["data"] and "written for this project" in t["data"] and "unseen" in t["data"]
    assert 0 <= t["wall_s"] < 60 and t["history"] == [
        [0, t["history"][0][1], t["history"][0][2]],
        [2, *t["history"][1][1:]],
    ]
    assert (
        t["final_contrastive"] == t["history"][-1][1] > 0
        and t["final_loss"] == t["history"][-1][2] > t["final_contrastive"]
    )
    assert [s for s, _ in seen] == [0, 1, 2] and all(v > 0 for _, v in seen)
    args = shlex.split(t["command"])
    assert args[:4] == ["python", "-m", "ctxlib", "sense-tune"]
    a = build_parser().parse_args(args[3:])
    assert (a.model, a.out, a.steps, a.lr, a.seed) == (str(bert_src), str(out), 3, 1e-3, 4)
    assert "sense_tune" not in checkpoint.read_config(bert_src)["summary"]  # the source is left as it was


def test_elmo_tune_measures_the_new_weights_on_the_held_out_sentences(elmo_src, tmp_path, pars, monkeypatch):
    from ctxlib.models.elmo import ElmoEncoder
    from ctxlib.training import elmo

    asked, ppl = _fake_corpus(monkeypatch, pars), []
    _spy(monkeypatch, elmo, "perplexity", ppl)
    cfg = st.SenseTuneConfig(steps=2, lr=1e-3, warmup=1, words=2, per_word=2, mlm_batch=2)
    out = st.sense_tune(elmo_src, tmp_path / "t", cfg, rows=rows())
    assert asked == [("all", "train"), ("corpora", "valid")] and not (tmp_path / "t" / "timeline.json").exists()
    enc = ElmoEncoder.from_checkpoint(out)
    assert checkpoint.read_config(out)["kind"] == "elmo"
    (model, feat, sents, device), _, figures = ppl[0]
    assert sents == elmo.held_out_sentences(pars[8:], 50, 3000, 0) and device == torch.device("cpu")
    assert enc.summary["perplexity"] == figures and figures["tokens"] > 0
    assert enc.summary["sense_tune"]["before"] == {"perplexity": {"forward": 9}}
    sd = checkpoint.load(out)[2]
    assert all(torch.equal(sd[k], v.half().float()) for k, v in model.state_dict().items())  # measured = saved (fp16)
    assert feat.word_vocab.itos == enc.featurizer.word_vocab.itos and len(enc.featurizer.char_vocab) > 10
    assert enc.summary["sense_tune"]["config"]["lr"] == 1e-3 and enc.model.cfg == model.cfg


@pytest.mark.parametrize("case", ["kind", "tuned", "layer0", "layer_past", "no_layers", "few_words"])
def test_prepare_refuses_what_it_cannot_tune(case, bert_src, elmo_src, tmp_path, pars):
    src = bert_src
    cfg, exclude = st.SenseTuneConfig(words=2, mlm_batch=2), ()
    if case == "kind":
        src = tmp_path / "w2v"
        src.mkdir()
        (src / "config.json").write_text('{"kind": "word2vec", "config": {}}', encoding="utf-8")
    elif case == "tuned":
        src = elmo(tmp_path, pars, summary={"sense_tune": {"words": 2}})
    elif case in ("layer0", "layer_past", "no_layers"):
        cfg.layers = {"layer0": (1, 0), "layer_past": (3, 1), "no_layers": ()}[case]
    else:
        exclude = ["小米"]
    want = {
        "kind": "holds a word2vec model; sense-tune is for BERT and ELMo checkpoints",
        "tuned": "is already sense-tuned; start from the pre-trained run",
        "layer0": r"layers are counted from the top, 1\.\.2; got \(1, 0\)",
        "layer_past": r"layers are counted from the top, 1\.\.2; got \(3, 1\)",
        "no_layers": r"1\.\.2; got \(\)",
        "few_words": "^1 words with two senses in the supplement's train split; the tune needs 2$",
    }[case]
    with pytest.raises(ValueError, match=want):
        st.sense_tune(src, tmp_path / "out", cfg, rows=rows(), paragraphs=pars, exclude=exclude)
    assert not (tmp_path / "out").exists()


def test_top_and_bottom_layers_are_taken(bert_src, tmp_path, pars):
    side, data = st._prepare(bert_src, st.SenseTuneConfig(layers=(2, 1), words=2, mlm_batch=2), 0, rows(), pars, ())
    assert side.n_layers == 2 and sorted(data) == ["小米", "苹果"] and data["小米"]["grain"][0] == "早上喝小米粥"
    _, data = st._prepare(bert_src, st.SenseTuneConfig(words=1, mlm_batch=2), 0, rows(), pars, ["苹果"])
    assert list(data) == ["小米"]  # exactly as many words as a step draws


def test_the_prepared_model_follows_the_seed(tmp_path, pars, monkeypatch):
    """torch is seeded before the model's side is built (its dropout and masks draw from it)."""
    made = []
    monkeypatch.setitem(st.SIDES, "bert", lambda *a: made.append(torch.rand(2)) or (_ for _ in ()).throw(OSError))
    src = bert(tmp_path, pars)
    for seed in (3, 3, 4):
        with pytest.raises(OSError):
            st._prepare(src, st.SenseTuneConfig(), seed, rows(), pars, ())
    assert torch.equal(made[0], made[1]) and not torch.equal(made[0], made[2])


def test_a_signal_stops_the_tune_and_nothing_is_saved(bert_src, tmp_path, pars):
    import os
    import signal

    def stop(step, loss):
        if step == 1:
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C: the Trainer ends the run after this step

    cfg = st.SenseTuneConfig(steps=6, lr=1e-3, warmup=1, words=2, per_word=2, mlm_batch=2)
    with pytest.raises(KeyboardInterrupt, match=r"^sense-tune stopped at step [1-5] of 6; nothing was saved$"):
        st.sense_tune(bert_src, tmp_path / "out", cfg, rows=rows(), paragraphs=pars, callback=stop)
    assert not (tmp_path / "out").exists()


def test_save_copies_the_pretraining_timeline_beside_the_new_weights(tmp_path):
    saved = []
    side = SimpleNamespace(save=lambda out, summary: saved.append((out, summary)))
    src = tmp_path / "src"
    src.mkdir()
    (src / "timeline.json").write_text('{"a": 1}', encoding="utf-8")
    (src / "timeline.npz").write_bytes(b"npz")
    (src / "other.txt").write_text("x", encoding="utf-8")
    st._save(side, src, tmp_path / "a" / "b", {"k": 1})
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["timeline.json", "timeline.npz"]
    assert (tmp_path / "a" / "b" / "timeline.npz").read_bytes() == b"npz" and saved == [
        (tmp_path / "a" / "b", {"k": 1})
    ]
    (src / "timeline.npz").unlink()
    st._save(side, src, tmp_path / "c", {})
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["timeline.json"]
    st._save(side, src, src / ".." / "src", {})  # into its own folder: nothing to copy, no error
    assert len(saved) == 3


def test_the_tune_steps_adamw_on_every_parameter_on_the_cpu(bert_src, tmp_path, pars, monkeypatch):
    """AdamW, stepped on the decay from step 0, with torch's defaults and the config's weight decay on all the weights (not the pre-trainings' grouped,
    fused optimizer), on the CPU whatever accelerator there is."""
    from ctxlib.training import trainer

    made, devices = [], []
    adamw, resolve = torch.optim.AdamW, trainer.resolve_device
    monkeypatch.setattr(torch.optim, "AdamW", lambda *a, **kw: made.append(adamw(*a, **kw)) or made[-1])
    monkeypatch.setattr(trainer, "resolve_device", lambda d: devices.append(d) or resolve(d))
    cfg = st.SenseTuneConfig(steps=4, lr=1e-3, warmup=2, words=2, per_word=2, mlm_batch=2, weight_decay=0.3)
    lrs = []
    st.sense_tune(
        bert_src,
        tmp_path / "out",
        cfg,
        rows=rows(),
        paragraphs=pars,
        callback=lambda s, lv: lrs.append(made[0].param_groups[0]["lr"]),
    )
    assert devices == ["cpu"] and len(made) == 1
    # the schedule SenseTuneConfig.train_config states: lr * min(1, (step + 1) / warmup) * (1 - step / steps)
    assert lrs == pytest.approx([1e-3 * min(1, (s + 1) / 2) * (1 - s / 4) for s in range(4)], rel=1e-9)
    (group,) = made[0].param_groups
    from ctxlib.models.bert_encoder import BertEncoder

    n_params = len(list(BertEncoder.from_checkpoint(tmp_path / "out").model.parameters()))
    assert len(group["params"]) == n_params and group["weight_decay"] == 0.3
    assert group["betas"] == (0.9, 0.999) and group["eps"] == 1e-8 and not group["fused"]


def test_the_draws_follow_the_seed_and_the_wall_time_is_recorded(bert_src, tmp_path, pars, monkeypatch):
    clock = iter(100 + 0.4321 * i for i in range(10**6))  # the module's clock only: each reading 0.4321 s on
    seen = []
    monkeypatch.setattr(st, "time", SimpleNamespace(time=lambda: seen.append(next(clock)) or seen[-1]))
    cfg = st.SenseTuneConfig(steps=2, lr=1e-2, warmup=1, words=2, per_word=4, mlm_batch=2, mlm_weight=0.0)
    outs = []
    for i, seed in enumerate((5, 3, 3)):
        seen.clear()
        outs.append(st.sense_tune(bert_src, tmp_path / f"o{i}", cfg, seed=seed, rows=rows(), paragraphs=pars))
    c, a, b = (checkpoint.load(o)[2] for o in outs)
    assert all(torch.equal(a[k], b[k]) for k in a) and not all(torch.equal(a[k], c[k]) for k in a)
    wall = checkpoint.read_config(outs[-1])["summary"]["sense_tune"]["wall_s"]
    assert wall == round(seen[-1] - seen[0], 1) and wall != round(wall) and wall != round(seen[-1] - seen[0], 2)


def test_one_sentence_per_sense_records_a_contrastive_loss_of_zero(bert_src, tmp_path, pars):
    """per_word 2 draws one sentence of each sense: no pair shares a sense, so there is nothing to pull together."""
    cfg = st.SenseTuneConfig(steps=2, lr=1e-3, warmup=1, words=2, per_word=2, mlm_batch=2, mlm_weight=0.0)
    out = st.sense_tune(bert_src, tmp_path / "out", cfg, rows=rows(), paragraphs=pars)
    t = checkpoint.read_config(out)["summary"]["sense_tune"]
    assert t["final_contrastive"] == 0.0 and t["final_loss"] == 0.0 and t["history"][-1][1:] == [0.0, 0.0]
