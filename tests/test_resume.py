"""Runs that survive interruption and scale out: DDP equivalence, exact resume, --resume end to end."""

import ddp_worker
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from ctxlib import corpus
from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer
from ctxlib.training import resume as rs
from ctxlib.training.bert import train as bert_train
from ctxlib.training.bert_batches import PretrainBatches
from ctxlib.training.bert_data import Documents
from ctxlib.training.trainer import TrainConfig, Trainer


@pytest.fixture(scope="module")
def pars():
    ps = corpus.load("all", "train")
    rng = np.random.default_rng(0)
    return [ps[i] for i in sorted(rng.permutation(len(ps))[:200])]


def test_two_gloo_processes_equal_one_process_on_the_full_batch(tmp_path):
    """DDP on 2 ranks (each on its half of every batch) ends with the parameters of one process on the whole
    batches, to fp tolerance (dropout off; equal loss terms per half)."""
    torch.set_num_threads(1)
    single = ddp_worker.tiny_model()
    start = {k: v.clone() for k, v in single.state_dict().items()}
    s = Trainer(single, ddp_worker.global_batches(), ddp_worker.config(), device="cpu").run()
    mp.start_processes(ddp_worker.run, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2, start_method="spawn")
    got = torch.load(tmp_path / "ddp.pt", weights_only=True)
    moved = 0.0
    for k, v in single.state_dict().items():
        torch.testing.assert_close(got["params"][k], v, rtol=1e-4, atol=1e-5, msg=k)
        moved = max(moved, float((v - start[k]).abs().max()))
    assert moved > 1e-3  # the steps really changed the weights, so the comparison means something
    assert got["tokens"] == s["tokens_seen"]  # tokens are summed over the ranks


class _Interrupt(Exception):
    pass


def _bert_run(pars, steps, stop_at=None, state=None):
    torch.manual_seed(0)
    tok = CharTokenizer.build(pars, min_count=1)
    model = BertModel(BertConfig(vocab_size=len(tok), hidden=32, layers=2, heads=2, ffn=64, max_len=48))  # dropout on
    batches = PretrainBatches(Documents(pars, tok), 8, 48, seed=3, whole_word=True)
    losses = []

    def cb(step, ema, info):
        losses.append(ema)
        if stop_at is not None and step == stop_at:
            raise _Interrupt

    tr = Trainer(
        model,
        batches,
        TrainConfig(steps=steps, lr=3e-3, warmup=2, amp="off", progress=False),
        device="cpu",
        callback=cb,
        state=state,
    )
    try:
        tr.run()
    except _Interrupt:
        pass
    return tr, model, losses


def test_resume_continues_exactly_like_an_uninterrupted_run(pars):
    torch.set_num_threads(1)
    _, full, full_losses = _bert_run(pars, steps=8)
    tr, _, first = _bert_run(pars, steps=8, stop_at=4)
    state = tr.state_dict()
    assert state["step"] == 4 and state["batches"][0]["done"] >= 1
    buf = __import__("io").BytesIO()
    torch.save(state, buf)  # the resume file must load with weights_only=True
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    _, resumed, rest = _bert_run(pars, steps=8, state=state)
    assert first + rest == pytest.approx(full_losses, rel=1e-6)  # the loss EMA continues from the saved one
    for k, v in full.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[k], v, rtol=1e-5, atol=1e-6, msg=k)
    # without the saved data position the next batches differ, so the test above can fail
    state2 = dict(state)
    state2["batches"] = [None]
    _, other, _ = _bert_run(pars, steps=8, state=state2)
    assert any(not torch.allclose(other.state_dict()[k], v) for k, v in full.state_dict().items())


def test_train_resume_end_to_end_and_fallback_to_weights(pars, tmp_path, caplog):
    torch.set_num_threads(1)
    out = tmp_path / "run"
    bert_train(preset="tiny", device="cpu", out=out, seed=0, paragraphs=pars, stretch=1e-9)  # stops after one step
    info = rs.run_info(out)
    assert info["preset"] == "tiny" and (out / rs.RESUME_FILE).is_file()
    first = rs.load_state(out)
    assert first["step"] == 1
    bert_train(device="cpu", paragraphs=pars, resume=out, stretch=1e-9)  # one more step
    assert rs.load_state(out)["step"] == 2
    bert_train(device="cpu", paragraphs=pars, resume=out, steps=30)  # re-planned: the run ends at 30, not 60
    s = __import__("json").loads((out / "config.json").read_text())["summary"]
    assert s["steps"] == 30 and s["finished"] is True and s["run"]["steps"] == 30
    assert rs.load_state(out)["train_config"]["steps"] == 30
    # a damaged resume file: the run goes on from model.pt's weights, and says so
    (out / rs.RESUME_FILE).write_bytes(b"not a zip")
    with caplog.at_level("WARNING"):
        assert rs.load_state(out) is None
    assert "cannot be read" in caplog.text
    bert_train(device="cpu", paragraphs=pars, resume=out, steps=33)  # weights alone: the step count goes on
    s = __import__("json").loads((out / "config.json").read_text())["summary"]
    assert s["steps"] == 33 and rs.load_state(out)["step"] == 33
    assert rs.load_state(out)["rewarm_from"] == 30  # the fresh optimizer joined at step 30


def test_fresh_optimizer_on_resumed_weights_warms_up_again():
    """Resumed from the weights alone (no optimizer state), the lr ramps up over `warmup` steps from the resumed
    step, then follows the schedule; with the optimizer state it follows the schedule at once."""
    cfg = TrainConfig(steps=1000, lr=1e-3, warmup=10, progress=False)
    model = torch.nn.Linear(2, 2)
    plain = Trainer(model, [], cfg, device="cpu")
    fresh = Trainer(
        model,
        [],
        cfg,
        device="cpu",
        state={"model": model.state_dict(), "step": 500, "tokens": 0, "trained_s": 0.0, "optimizer": None},
    )
    fresh._prepare()
    assert fresh.step == 500 and fresh.rewarm_from == 500
    assert fresh.lr_at(500) == pytest.approx(plain.lr_at(500) / 10)
    assert fresh.lr_at(504) == pytest.approx(plain.lr_at(504) / 2)
    assert fresh.lr_at(510) == pytest.approx(plain.lr_at(510))
    kept = Trainer(model, [], cfg, device="cpu", state={**fresh.state_dict(), "rewarm_from": None})
    kept._prepare()
    assert kept.rewarm_from is None and kept.lr_at(500) == pytest.approx(plain.lr_at(500))


def test_bucket_batches_resume_position():
    from ctxlib.training.elmo_batches import BucketBatches

    class Feat:
        def batch(self, sents):
            return [tuple(s) for s in sents]

    sents = [[f"w{i}"] * (1 + i % 7) for i in range(300)]
    a = BucketBatches(sents, Feat(), 40, seed=5)
    it = iter(a)
    seen = [next(it) for _ in range(23)]  # crosses an epoch boundary
    st = a.state_dict()
    nxt = [next(it) for _ in range(10)]
    b = BucketBatches(sents, Feat(), 40, seed=5)
    b.load_state_dict(st)
    itb = iter(b)
    assert [next(itb) for _ in range(10)] == nxt
    c = BucketBatches(sents, Feat(), 40, seed=5)  # a fresh one starts over: the saved position is what matters
    assert [next(itc) for itc in [iter(c)] for _ in range(23)] == seen and next(iter(c)) != nxt[0]


def test_elmo_stretch_then_resume_finishes_the_plan(pars, tmp_path):
    import json

    from ctxlib.training.elmo import train as elmo_train

    torch.set_num_threads(1)
    out = tmp_path / "elmo"
    elmo_train(preset="tiny", device="cpu", out=out, paragraphs=pars, stretch=1e-9)
    assert rs.load_state(out)["step"] == 1 and rs.run_info(out)["kind"] == "elmo"
    with pytest.raises(ValueError, match="not a bert run"):
        bert_train(device="cpu", paragraphs=pars, resume=out)
    elmo_train(device="cpu", paragraphs=pars, resume=out)
    s = json.loads((out / "config.json").read_text())["summary"]
    assert s["steps"] == 30 and s["finished"] and s["perplexity"]["forward"] > 1


@pytest.mark.parametrize("kind", ["bert", "elmo"])
def test_resumed_plan_is_the_fresh_plan_with_its_steps(kind, pars, tmp_path):
    """--resume rebuilds the run's plan from its preset name and the record's planned steps: the fresh plan with
    steps replaced (the record keeps no other setting)."""
    import dataclasses
    import importlib

    from ctxlib.training.presets import Preset
    from ctxlib.training.run import RunSpec

    torch.set_num_threads(1)
    mod = importlib.import_module(f"ctxlib.training.{kind}")
    out = tmp_path / kind
    mod.train(preset="tiny", device="cpu", out=out, paragraphs=pars[:60], stretch=1e-9, steps=45)  # one step
    fresh = RunSpec.make(kind, mod.PRESETS["tiny"], 0, tmp_path / "fresh", steps=45)
    assert isinstance(fresh.plan, Preset) and fresh.plan.steps == 45
    assert RunSpec.make(kind, "tiny", 0, tmp_path / "fresh", steps=45).plan == fresh.plan  # a name: the same preset
    resumed = RunSpec.make(kind, mod.PRESETS["default"], 7, None, resume=out)  # preset and seed come from the run
    assert resumed.preset == "tiny" and resumed.seed == 0 and resumed.out == out and resumed.state["step"] == 1
    assert resumed.plan == fresh.plan == dataclasses.replace(mod.PRESETS["tiny"], steps=45)
    replanned = RunSpec.make(kind, mod.PRESETS["tiny"], 0, None, resume=out, steps=50)
    assert replanned.plan == dataclasses.replace(fresh.plan, steps=50)
    assert resumed.run_record(1)["steps"] == 45 and replanned.run_record(1)["steps"] == 50
    # the recorded rebuild command names the re-planned steps (a run of 8,000 steps is rebuilt with --steps 8000)
    assert replanned.command() == f"python -m ctxlib train {kind} --preset tiny --seed 0 --steps 50"
    plain = RunSpec.make(kind, mod.PRESETS["tiny"], 0, tmp_path / "plain")
    assert plain.command() == f"python -m ctxlib train {kind} --preset tiny --seed 0"


def test_init_from_continues_pretraining_on_another_corpus_in_a_new_folder(pars, tmp_path):
    """--init-from: a new run in its own folder, on the user's text, from another run's weights, vocabulary and step
    count; the source folder is left as it was, and the new run resumes like any other."""
    import json

    torch.set_num_threads(1)
    src, new = tmp_path / "src", tmp_path / "new"
    bert_train(preset="tiny", device="cpu", out=src, seed=0, paragraphs=pars, steps=8)
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    text = tmp_path / "mine.txt"
    text.write_text("\n".join(p.text for p in pars[:40]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="beyond its 8 steps"):
        bert_train(device="cpu", out=new, init_from=src, corpus_path=str(text), steps=8)
    with pytest.raises(ValueError, match="exclude each other"):
        bert_train(device="cpu", out=new, init_from=src, resume=src, steps=12)
    bert_train(
        device="cpu", out=new, init_from=src, corpus_path=str(text), steps=12, stretch=1e-9
    )  # one step, then stop
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before  # the source is untouched
    assert rs.load_state(new)["step"] == 9 and rs.load_state(new)["rewarm_from"] == 8
    bert_train(device="cpu", resume=new)  # the new run resumes with its own corpus and plan
    s = json.loads((new / "config.json").read_text())["summary"]
    assert s["steps"] == 12 and s["finished"] and s["run"]["init_from"] == str(src)
    assert s["run"]["corpus"] == str(text) and s["run"]["preset"] == "tiny"
    assert s["command"].endswith(f"--init-from {src} --steps 12 --corpus {text} --out DIR")
    assert json.loads((new / "vocab.json").read_text()) == json.loads(before["vocab.json"])
    a, b = torch.load(src / "model.pt"), torch.load(new / "model.pt")
    assert any(not torch.equal(a[k], b[k]) for k in a)
    # the timeline goes on from the source's (the tiny preset records none, so a stand-in timeline is asked)
    from ctxlib.training.bert import PRESETS
    from ctxlib.training.run import RunFolder, RunSpec

    class Timeline:
        def load_existing(self, directory):
            self.loaded = str(directory)

    spec = RunSpec.make("bert", PRESETS["tiny"], 0, tmp_path / "third", init_from=src, steps=20)
    RunFolder(spec, 0, 1, save_checkpoint=lambda summary: None, timeline=(tl := Timeline()))
    assert tl.loaded == str(src)
    spec = RunSpec.make(
        "bert", PRESETS["tiny"], 0, None, resume=new
    )  # resumed before it saved a timeline: the source's
    RunFolder(spec, 0, 1, save_checkpoint=lambda summary: None, timeline=(tl := Timeline()))
    assert tl.loaded == str(src) and spec.init_from == str(src)
    (new / "timeline.json").write_text("{}")  # once it has saved its own (which holds the source's snapshots too)
    RunFolder(spec, 0, 1, save_checkpoint=lambda summary: None, timeline=(tl := Timeline()))
    assert tl.loaded == str(new)
