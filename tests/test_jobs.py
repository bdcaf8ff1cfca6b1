"""ctxlib.jobs (background jobs, one per slot per server) and the fine-tuning page's live run with a tiny BERT."""
import threading
import time

import numpy as np
import pytest
import torch

from ctxlib import jobs
from ctxlib.evaluation import finetune_live as fl

SLOT = "test-slot"


@pytest.fixture(autouse=True)
def no_job_left():
    yield
    for slot in (SLOT, "finetune"):
        job = jobs.current(slot)
        if job is not None:
            job.cancel()
            assert job.wait(60), "a test left a job running"


def _steps(n, pause=0.0, log=None):
    def work(job):
        for k in range(1, n + 1):
            time.sleep(pause)
            if log is not None:
                log.append(k)
            job.report(k / n, {"step": k}, phase="work")
        return {"steps": n}
    return work


def test_start_reports_progress_and_result():
    job = jobs.start(SLOT, _steps(5))
    assert job.wait(10)
    assert job.state == jobs.DONE and job.result == {"steps": 5} and job.error is None
    assert job.progress == 1.0 and [p["step"] for p in job.points] == [1, 2, 3, 4, 5] and job.phase == "work"
    assert jobs.current(SLOT) is job and jobs.get(SLOT, job.id) is job and jobs.get(SLOT, job.id + 1) is None
    assert job.eta_s() == 0.0 and job.elapsed_s() >= 0


def test_cancel_stops_the_work_at_its_next_report():
    log = []
    job = jobs.start(SLOT, _steps(1000, pause=0.01, log=log))
    while not job.points:
        time.sleep(0.01)
    job.cancel()
    assert job.wait(10)
    assert job.state == jobs.CANCELLED and job.result is None
    n = len(log)
    assert n < 1000 and len(job.points) <= n
    time.sleep(0.05)
    assert len(log) == n  # the thread has really stopped


def test_one_job_per_slot_at_a_time():
    gate = threading.Event()

    def blocked(job):
        job.report(0.4)
        gate.wait(10)
        return "first"

    first = jobs.start(SLOT, blocked, owner="alice")
    while first.progress < 0.4:
        time.sleep(0.01)
    with pytest.raises(jobs.Busy) as e:
        jobs.start(SLOT, _steps(1), owner="bob")
    assert e.value.job is first and "40% done" in str(e.value)
    assert first.eta_s() > 0 and jobs.current(SLOT) is first
    other = jobs.start("another-slot", _steps(1))  # other slots are independent
    assert other.wait(10) and other.state == jobs.DONE
    gate.set()
    assert first.wait(10) and first.result == "first"
    second = jobs.start(SLOT, _steps(2), owner="bob")  # the slot is free again
    assert second.wait(10) and second.state == jobs.DONE and jobs.current(SLOT) is second


def test_concurrent_starts_admit_exactly_one():
    gate = threading.Event()
    started, refused = [], []

    def try_start():
        try:
            started.append(jobs.start(SLOT, lambda job: gate.wait(10)))
        except jobs.Busy:
            refused.append(1)

    threads = [threading.Thread(target=try_start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gate.set()
    assert len(started) == 1 and len(refused) == 7
    assert started[0].wait(10)


def test_a_failing_job_keeps_its_error():
    def boom(job):
        raise RuntimeError("out of reviews")

    job = jobs.start(SLOT, boom)
    assert job.wait(10)
    assert job.state == jobs.FAILED and job.error == "RuntimeError: out of reviews"
    assert jobs.start(SLOT, _steps(1)).wait(10)  # a failed job frees the slot


def test_the_job_runs_torch_on_one_thread_without_changing_others():
    old = torch.get_num_threads()
    torch.set_num_threads(2)  # whatever OMP_NUM_THREADS says, so that "unchanged" can fail
    before = torch.get_num_threads()
    seen = {}

    def work(job):
        seen["job"] = torch.get_num_threads()
        t = threading.Thread(target=lambda: seen.__setitem__("new", torch.get_num_threads()))
        t.start()
        t.join()

    try:
        assert jobs.start(SLOT, work, threads=1).wait(10)
        assert seen["job"] == 1
        assert seen["new"] == before == 2 and torch.get_num_threads() == before
    finally:
        torch.set_num_threads(old)


# -- the live fine-tuning run, tiny BERT ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def fake_features():
    from app_fakes import FakeEncoder

    return FakeEncoder("elmo", 3), FakeEncoder("word2vec", 1)


def test_cut_words_keeps_whole_words():
    assert fl.cut_words(["房间", "很", "干净", "服务", "好"], 5) == ["房间", "很", "干净"]
    assert fl.cut_words(["一二三四五六"], 4) == ["一二三四"]
    assert fl.cut_words([], 4) == []


def test_live_run_reports_each_step_and_scores_the_same_reviews(tiny_bert, fake_features, one_thread):
    elmo, w2v = fake_features
    state = {k: v.detach().clone() for k, v in tiny_bert.model.state_dict().items()}
    job = jobs.start("finetune", lambda j: fl.run(j, tiny_bert, elmo, w2v, n_train=24, n_test=16, batch=8))
    assert job.wait(120), "the tiny run should take seconds"
    assert job.state == jobs.DONE, job.error
    r = job.result
    assert [p["step"] for p in r["history"]] == [1, 2, 3] == [p["step"] for p in job.points]
    assert all(np.isfinite(p["loss"]) and 0 <= p["acc"] <= 1 for p in r["history"])
    assert r["n_train"] == 24 and r["n_test"] == 16 and 0 <= r["accuracy"] <= 1
    assert set(r["baselines"]) == {"bert_cls", "elmo", "word2vec"} and all(0 <= v <= 1 for v in r["baselines"].values())
    test_words, test_labels = fl.sample("test", 16)
    assert [t for t, _, _ in r["examples"]] == ["".join(w) for w in test_words[:8]]  # the fixed held-out reviews
    assert [g for _, g, _ in r["examples"]] == list(test_labels[:8])
    assert all(len(t) <= fl.MAX_CHARS for t, _, _ in r["examples"]) and all(0 <= p <= 1 for _, _, p in r["examples"])
    assert abs(r["majority"] - max(test_labels.mean(), 1 - test_labels.mean())) < 1e-9
    for k, v in tiny_bert.model.state_dict().items():  # fine-tuning worked on a copy
        assert torch.equal(v, state[k]), k


def test_live_run_cancelled_mid_fine_tuning(tiny_bert, one_thread):
    job = jobs.start("finetune", lambda j: fl.run(j, tiny_bert, n_train=200, n_test=16, batch=4))
    t0 = time.time()
    while not job.points and job.running and time.time() - t0 < 60:
        time.sleep(0.01)
    job.cancel()
    assert job.wait(60)
    assert job.state == jobs.CANCELLED and job.result is None
    assert 1 <= len(job.points) < 50  # 200 reviews in batches of 4: stopped well before the end


def test_full_size_rows_read_the_eval_records():
    from ctxlib.records import EvalResult

    bert = EvalResult(task="sentiment", score=0.75, per_layer_score=[0.7, 0.74, 0.72])
    elmo = EvalResult(task="sentiment", input_score=0.8, concat_score=None, mix_probe_score=0.76, word2vec_score=0.79,
                      word2vec_probe_score=0.76)
    rows = fl.full_size_rows(bert, elmo)
    assert [(k, v) for k, v, _ in rows] == [("bert_finetuned", 0.75), ("bert_probe", 0.74), ("elmo_input", 0.8),
                                             ("elmo_probe", 0.76), ("w2v_input", 0.79), ("w2v_probe", 0.76)]
    assert fl.full_size_rows(None, None) == []
