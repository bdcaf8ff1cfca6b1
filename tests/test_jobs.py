"""ctxlib.jobs (the server-wide job queue) and the fine-tuning page's live run with a tiny BERT."""

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from ctxlib import jobs
from ctxlib.evaluation import finetune_live as fl

KIND = "test-kind"


@pytest.fixture(autouse=True)
def no_job_left():
    yield
    running, waiting = jobs.line()
    for job in waiting + running:
        job.cancel()
    for job in running:
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


def _gated(gate, started, name):
    """A job that notes its start, reports 10 %, then waits for `gate`."""

    def work(job):
        started.append(name)
        job.report(0.1, phase="work")
        t0 = time.time()
        while not gate.wait(0.02):  # a cancel stops it at the next report
            assert time.time() - t0 < 120, "gate never opened"
            job.report(0.1)
        job.report(1.0)
        return name

    return work


def _until(cond, timeout=60):
    t0 = time.time()
    while not cond():
        assert time.time() - t0 < timeout, "timed out"
        time.sleep(0.005)


def test_start_reports_progress_and_result():
    job = jobs.start(KIND, _steps(5))
    assert job.wait(60)
    assert job.state == jobs.DONE and job.result == {"steps": 5} and job.error is None
    assert job.progress == 1.0 and [p["step"] for p in job.points] == [1, 2, 3, 4, 5] and job.phase == "work"
    assert jobs.current(KIND) is job and jobs.get(KIND, job.id) is job and jobs.get(KIND, job.id + 1) is None
    assert jobs.get("other-kind", job.id) is None
    assert job.eta_s() == 0.0 and job.elapsed_s() >= 0 and job.place() is None


@pytest.mark.parametrize("capacity", [1, 2])
def test_first_in_first_out(monkeypatch, capacity):
    monkeypatch.setattr(jobs, "MAX_RUNNING", capacity)
    gates = [threading.Event() for _ in range(5)]
    started = []
    line = [jobs.start(KIND, _gated(g, started, k), owner=f"student{k}") for k, g in enumerate(gates)]
    _until(lambda: len(started) == capacity)
    assert [j.state for j in line] == [jobs.RUNNING] * capacity + [jobs.QUEUED] * (5 - capacity)
    assert [j.place() for j in line] == [0] * capacity + list(range(1, 6 - capacity))
    running, waiting = jobs.line()
    assert running == line[:capacity] and waiting == line[capacity:]
    # each waiting job's wait grows along the line and is counted in its eta
    waits = [j.wait_s() for j in line]
    assert waits[:capacity] == [0.0] * capacity and all(a <= b for a, b in zip(waits, waits[1:])) and waits[-1] > 0
    assert all(j.eta_s() > j.wait_s() for j in line[capacity:])
    for k, gate in enumerate(gates):  # finish them in line order: each end lets the next one in
        gate.set()
        assert line[k].wait(60) and line[k].result == k
        _until(lambda: len(started) == min(5, k + 1 + capacity))
        assert sorted(started) == list(range(min(5, k + 1 + capacity)))  # two let in together may start in either order
    assert [j.state for j in line] == [jobs.DONE] * 5
    assert all(b.started >= a.started for a, b in zip(line, line[1:]))


def test_five_students_start_at_once():
    """The issue's figure: 5 sessions press Start at the same moment; each gets a distinct place, they run in
    that order, nothing crashes."""
    gate, started, seen, errors = threading.Event(), [], {}, []
    barrier = threading.Barrier(5)

    def student(k):
        try:
            barrier.wait(5)
            job = jobs.start(KIND, _gated(gate, started, k), owner=f"student{k}")
            seen[k] = (job, job.place())
        except Exception as e:  # noqa: BLE001 - the test reports it
            errors.append(e)

    threads = [threading.Thread(target=student, args=(k,)) for k in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors, errors
    by_id = sorted(seen.values(), key=lambda s: s[0].id)
    assert [p for _, p in by_id] == [0, 1, 2, 3, 4]  # each saw a distinct place: the order of arrival
    waits = [job.wait_s() for job, _ in by_id]
    assert waits[0] == 0 and all(0 < a <= b for a, b in zip(waits[1:], waits[2:]))
    gate.set()
    for job, _ in by_id:
        assert job.wait(60) and job.state == jobs.DONE
    assert started == [seen_k for seen_k, _ in sorted(seen.items(), key=lambda kv: kv[1][0].id)]


def test_same_owner_gets_its_job_back():
    gate, started = threading.Event(), []
    first = jobs.start(KIND, _gated(gate, started, "a"), owner="alice")
    again = jobs.start(KIND, _gated(gate, started, "b"), owner="alice")
    other = jobs.start("another-kind", _steps(1), owner="alice")  # one per kind: another kind queues behind
    assert again is first and other is not first and other.place() == 1
    assert [j.id for j in jobs.owned_by("alice")] == [first.id, other.id]
    assert jobs.owned_by("alice", KIND) == [first]
    first.cancel()  # while it is being cancelled, a new start is a new job
    third = jobs.start(KIND, _steps(1), owner="alice")
    assert third is not first
    gate.set()
    assert first.wait(60) and other.wait(60) and third.wait(60)
    assert first.state == jobs.CANCELLED and started == ["a"] and third.state == jobs.DONE


def test_cancel_a_queued_job_leaves_the_line():
    gate, started = threading.Event(), []
    a = jobs.start(KIND, _gated(gate, started, "a"))
    b = jobs.start(KIND, _gated(gate, started, "b"))
    c = jobs.start(KIND, _gated(gate, started, "c"))
    assert (b.place(), c.place()) == (1, 2)
    b.cancel()
    assert b.state == jobs.CANCELLED and b.wait(0) and b.place() is None and c.place() == 1
    assert jobs.line()[1] == [c]
    gate.set()
    assert a.wait(60) and c.wait(60)
    assert started == ["a", "c"] and b.started is None and b.result is None


def test_cancel_a_running_job_keeps_what_was_done():
    log = []

    def work(job):
        for k in range(1, 10_000):
            time.sleep(0.005)
            log.append(k)
            job.report(k / 10_000, {"step": k}, partial={"step": k, "weights": [k, -k]})

    job = jobs.start(KIND, work)
    nxt = jobs.start(KIND, _steps(2))
    _until(lambda: len(job.points) >= 3)
    job.cancel()
    assert job.cancel_requested and job.wait(60)
    assert job.state == jobs.CANCELLED and job.result is None
    n = len(log)
    assert 3 <= n < 10_000 and len(job.points) == n  # the work stopped at the report after the cancel
    assert job.partial == {"step": n, "weights": [n, -n]}  # the last partial result is kept
    time.sleep(0.05)
    assert len(log) == n  # the thread has really stopped
    assert nxt.wait(60) and nxt.state == jobs.DONE  # the line moved on


def test_a_failing_job_keeps_its_error_and_does_not_block_the_line():
    def boom(job):
        job.report(0.5, partial="half")
        raise RuntimeError("out of reviews")

    job = jobs.start(KIND, boom)
    after = jobs.start(KIND, _steps(1))
    assert job.wait(60) and after.wait(60)
    assert job.state == jobs.FAILED and job.error == "RuntimeError: out of reviews" and job.partial == "half"
    assert after.state == jobs.DONE


def test_the_reaper_frees_an_abandoned_job(monkeypatch):
    monkeypatch.setattr(jobs, "STALE_S", 0.3)
    monkeypatch.setattr(jobs, "REAP_EVERY_S", 0.05)
    gate, started = threading.Event(), []
    gone = jobs.start(KIND, _gated(gate, started, "gone"), owner="left-the-room")
    waiting = jobs.start(KIND, _gated(gate, started, "waiting"), owner="also-left")
    here = jobs.start(KIND, _steps(3), owner="still-here")
    anonymous = jobs.start("another-kind", _steps(1))  # no owner: nobody polls it, it is never reaped
    _until(lambda: started == ["gone"])
    t0 = time.time()
    while time.time() - t0 < 30 and not (gone.finished and waiting.finished and here.finished):
        here.touched = time.time() + 60  # its owner polls (as touch(), but a busy machine's stall cannot outlast it)
        time.sleep(0.02)
    assert gone.state == waiting.state == jobs.CANCELLED
    assert gone.cancel_reason == waiting.cancel_reason == "owner left"
    assert here.wait(60) and here.state == jobs.DONE and anonymous.wait(60) and anonymous.state == jobs.DONE
    assert started == ["gone"]  # the abandoned waiting job never ran


def test_touch_keeps_a_job_until_its_owner_is_silent_for_stale_s(monkeypatch):
    """The reaper's rule on a clock of its own (no sleeps: a loaded machine cannot make it flaky)."""
    gate = threading.Event()
    job = jobs.start(KIND, _gated(gate, [], "polled"), owner="at-the-desk")
    try:
        job.touch()
        assert jobs.reap(now=job.touched + jobs.STALE_S - 0.5) == [] and not job.finished
        job.touch()
        later = job.touched + jobs.STALE_S + 0.5
        assert jobs.reap(now=later) == [job]
        assert job.wait(60) and job.state == jobs.CANCELLED and job.cancel_reason == "owner left"
    finally:
        gate.set()


def test_reap_forgets_old_finished_jobs(monkeypatch):
    job = jobs.start(KIND, _steps(1), owner="bob")
    assert job.wait(60)
    assert jobs.reap(now=time.time() + 10) == [] and jobs.get(KIND, job.id) is job
    assert jobs.reap(now=time.time() + jobs.KEEP_S + 10) == [] and jobs.get(KIND, job.id) is None


def test_wait_estimates_use_the_kinds_last_run(monkeypatch):
    gate, started, kind = threading.Event(), [], "a-kind-never-run-before"
    first = jobs.start(kind, _gated(gate, started, 0), expected_s=30)
    second = jobs.start(kind, _steps(1), expected_s=30)
    _until(lambda: started == [0])
    assert 0 < second.wait_s() and second.eta_s() > second.wait_s()
    assert jobs.wait_if_started_now() >= second.wait_s() + 29  # behind the second one's 30 s
    gate.set()
    assert first.wait(60) and second.wait(60)
    assert second.expected_run_s() < 5  # now it knows a run of this kind takes well under a second
    assert jobs.wait_if_started_now() == 0.0


class _Clock:
    """jobs' clock, advanced only by the work itself: the rates and estimates come out the same on a loaded machine."""

    def __init__(self):
        self.t = 1_000_000.0

    def time(self):
        return self.t

    def sleep(self, s):
        self.t += s


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(jobs, "time", SimpleNamespace(time=c.time))
    return c


def test_time_left_leaves_out_the_setup_before_the_first_progress(clock):
    gate, seen = threading.Event(), {}

    def work(job):
        clock.sleep(0.8)  # loading data: no progress yet
        for k in range(1, 11):
            clock.sleep(0.03)
            job.report(k / 20, phase="train")
        seen["left"] = job.remaining_s()  # half done after 0.8 s of setup and 0.3 s of steps: 0.27 s since the first
        gate.wait(60)
        return None

    job = jobs.start("setup-kind", work, expected_s=100)
    _until(lambda: "left" in seen)
    gate.set()
    assert job.wait(60)
    # from the first report (5 %) to 50 %: 0.27 s for 45 points, so 50 points left take 0.3 s; elapsed * (1 - p) / p
    # said 1.1 s: the setup counted as progress
    assert seen["left"] == pytest.approx(0.5 * 0.27 / 0.45)


def test_expected_run_is_the_median_of_recent_runs_not_a_slow_first_one(clock):
    kind = "median-kind"

    def quick(job):
        clock.sleep(0.01)
        job.report(1.0)

    slow = jobs.start(kind, lambda job: clock.sleep(0.6), expected_s=30)
    assert slow.wait(60) and slow.expected_run_s() == pytest.approx(0.6)
    for _ in range(2):
        assert jobs.start(kind, quick).wait(60)
    probe = jobs.start(kind, _gated(threading.Event(), [], "x"))
    assert probe.expected_run_s() == pytest.approx(
        0.01
    )  # the two quick runs outvote the slow first one (last run: 0.6 s)
    probe.cancel()


def test_a_queued_job_is_estimated_from_the_running_job_of_its_kind():
    gate, kind = threading.Event(), "projected-kind"

    def work(job):
        time.sleep(0.5)  # setup
        for k in range(1, 11):
            time.sleep(0.02)
            job.report(k / 20, phase="train")
        while not gate.wait(0.02):
            job.report(0.5)
        return None

    first = jobs.start(kind, work, expected_s=100)
    second = jobs.start(kind, _steps(1), expected_s=100)
    assert second.expected_run_s() == 100  # nothing known yet: what start was told
    _until(lambda: first.progress >= 0.5)
    assert second.expected_run_s() < 5 and second.wait_s() < 5  # the running one's rate: ~0.4 s a run, not 100
    gate.set()
    assert first.wait(60) and second.wait(60)


def test_the_elmo_mix_job_reports_steps_and_keeps_the_weights_reached(monkeypatch):
    from ctxlib.evaluation import tasks

    def fake_train(enc, task, l2, n_train, n_test, max_seconds, callback, features_callback):
        features_callback(n_train + n_test, n_train + n_test)
        for s in range(1, 1000):
            time.sleep(0.005)
            callback(s, 1000, [0.5, 0.5 - s / 1e4, s / 1e4])
        return {"mix_weights": [0.5, 0.4, 0.1]}

    monkeypatch.setattr(tasks, "train_mix_live", fake_train)
    job = jobs.start("elmo_mix", lambda j: tasks.train_mix_job(j, None, "ner", 0.1, max_seconds=60))
    _until(lambda: len(job.points) >= 5)
    assert job.phase == "train" and 0.4 < job.progress < 1
    job.cancel()
    assert job.wait(60) and job.state == jobs.CANCELLED
    n = len(job.points)
    assert job.points[-1] == {"step": n, "weights": [0.5, 0.5 - n / 1e4, n / 1e4]}
    assert job.partial == {"task": "ner", "l2": 0.1, "step": n, "mix_weights": [0.5, 0.5 - n / 1e4, n / 1e4]}
    done = jobs.start("elmo_mix", lambda j: tasks.train_mix_job(j, None, "pos", 0.0, max_seconds=60))
    assert done.wait(30) and done.result == {"task": "pos", "l2": 0.0, "mix_weights": [0.5, 0.4, 0.1]}


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
        assert jobs.start(KIND, work, threads=1).wait(60)
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
    elmo = EvalResult(
        task="sentiment",
        input_score=0.8,
        concat_score=None,
        mix_probe_score=0.76,
        word2vec_score=0.79,
        word2vec_probe_score=0.76,
    )
    rows = fl.full_size_rows(bert, elmo)
    assert [(k, v) for k, v, _ in rows] == [
        ("bert_finetuned", 0.75),
        ("bert_probe", 0.74),
        ("elmo_input", 0.8),
        ("elmo_probe", 0.76),
        ("w2v_input", 0.79),
        ("w2v_probe", 0.76),
    ]
    assert fl.full_size_rows(None, None) == []


class _SlowFake:
    """app_fakes.FakeEncoder, 20 ms per batch: a feature extraction long enough to cancel in."""

    def __init__(self):
        from app_fakes import FakeEncoder

        self.inner = FakeEncoder("elmo", 3)
        self.name, self.layer_names = "slow-fake", self.inner.layer_names

    def encode_tokens(self, batch, texts):
        time.sleep(0.02)
        return self.inner.encode_tokens(batch, texts)


def test_the_elmo_mix_job_on_fake_features_runs_and_stops_inside_the_extraction():
    """(Sentiment: the reviews are loaded already by the fine-tuning tests above.)"""
    from ctxlib.evaluation import tasks

    job = jobs.start(
        "elmo_mix",
        lambda j: tasks.train_mix_job(j, _SlowFake(), "sentiment", 0.0, n_train=200, n_test=200, max_seconds=60),
        threads=1,
    )
    _until(lambda: job.progress > 0.05, timeout=60)
    assert job.phase == "features" and not job.points
    job.cancel()
    assert job.wait(60) and job.state == jobs.CANCELLED and job.progress < 0.4 and not job.points
    done = jobs.start(
        "elmo_mix",
        lambda j: tasks.train_mix_job(j, _SlowFake(), "sentiment", 0.0, n_train=40, n_test=40, max_seconds=5),
    )
    assert done.wait(120) and done.state == jobs.DONE, done.error
    r = done.result
    assert r["task"] == "sentiment" and len(r["mix_weights"]) == 3 and abs(sum(r["mix_weights"]) - 1) < 1e-5
    assert [p["step"] for p in done.points] == list(range(1, len(r["history"]) + 1))
    assert done.points[-1]["weights"] == r["history"][-1] == done.partial["mix_weights"]
