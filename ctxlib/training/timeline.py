"""A training timeline: small snapshots of a model at ~16 log-spaced steps, replayed by the training page.

Files (in the checkpoint folder; at most ~4 MiB together):

`timeline.json` (schema 1)::

    {"schema": 1, "kind": "bert" | "elmo", "layer_names": [...], "planned_steps": int,
     "sets": {word: {"sentences": [...], "labels": [...]}},   # the app's example sets, in order
     "fill_mask_sentences": [text with one [MASK], ...],        # BERT: top-5 answers per snapshot
     "lm_sentences": [{"text", "index", "word", "start"}],      # ELMo: next/previous-word answers at token `index`;
                                                                # GPT: the next character after text[:start]
     "attention_sentences": [text, text], "attention_tokens": [[tokens], [tokens]],
     "snapshots": [{"step", "tokens", "wall_s", "train_loss", "valid_loss",
                    "sense_accuracy": {word: [per layer]}, "sense_accuracy_mean": [per layer],
                    "pair_ranking_mean": [per layer],
                    "fill_mask": [[[token, p] x5] per sentence] | null,
                    "lm": [{"forward": [[word, p] x5], "backward": [...]}] | null}]}   # GPT: "forward" only

`timeline.npz` (no pickles): `vectors_q` int8 (S, N, L, D) and `vectors_scale` float32 (S, N, L): the
target word's vector of every example sentence (all sets concatenated in `sets` order) at every layer,
stored as q * scale per vector; `attention_0`, `attention_1` float16 (S, L, H, T, T) for BERT and GPT (GPT
files written before the GPT branch of `_measure` hold neither attention nor next-character answers).
Snapshot k of the JSON is row k of every array. Step 0 is the untrained model.
"""

from __future__ import annotations

import io
import json
import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .. import checkpoint
from ..analysis import loo_centroid_accuracy, pair_ranking
from ..vecmath import EPS

log = logging.getLogger(__name__)
SCHEMA = 1
N_SNAPSHOTS = 16

FILL_MASK_SENTENCES = [  # written for the timeline (not an evaluation set): everyday cloze items
    "早餐我喝了一杯热牛[MASK]。",
    "今天天气很[MASK]，我们去公园散步吧。",
    "我们明天上午九点在学校门[MASK]见面。",
    "中华人民共和国的首都是北[MASK]。",
    "这家酒店的服务很周[MASK]。",
    "苹果手[MASK]的电池不太耐用。",
    "春节期间，很多人回家过[MASK]。",
    "这部电影太感[MASK]了，我看哭了。",
    "请把窗[MASK]打开，屋里太闷了。",
    "小明这次考试得了一百[MASK]。",
    "医生说他需要多喝[MASK]，多休息。",
    "会议将在下[MASK]三点开始。",
    "经济发展离不开科学技[MASK]。",
    "这本书我已经看[MASK]了。",
    "外面下着大[MASK]，记得带伞。",
    "我妈妈是一名中学老[MASK]。",
    "房间很干[MASK]，床也很舒服。",
    "他们坐飞[MASK]去上海出差。",
    "她的中文说得非常流[MASK]。",
    "他在银行存了一大笔[MASK]。",
]
FILL_MASK_ANSWERS = "奶好口京到机年动户分水午术完雨师净机利钱"  # the character each blank above was written for
ATTENTION_SENTENCES = ["苹果手机很好用，就是价格有点贵。", "他在银行存了一笔钱。"]


def snapshot_steps(planned: int, n: int = N_SNAPSHOTS) -> list[int]:
    """0 (untrained) and about n-1 log-spaced steps from 1 to `planned`."""
    if planned < 1:
        return [0]
    return sorted({0, *(int(round(x)) for x in np.logspace(0, np.log10(planned), n - 1))})


def _quantize(v: np.ndarray):
    """(..., D) float -> int8 codes and a float32 scale per vector."""
    scale = np.abs(v).max(-1) / 127.0
    q = np.round(v / np.maximum(scale[..., None], EPS)).astype(np.int8)
    return q, scale.astype(np.float32)


def dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return q.astype(np.float32) * scale[..., None]


class Timeline:
    """Records snapshots during training. `make_encoder()` returns an Encoder around the live model;
    `valid_loss()` the held-out loss. Call `maybe_record(step, tokens, wall_s, train_loss)` every step."""

    def __init__(
        self,
        kind: str,
        planned_steps: int,
        model,
        make_encoder: Callable,
        valid_loss: Callable[[], float],
        n: int = N_SNAPSHOTS,
    ):
        from ..examples import EXAMPLE_SETS

        self.kind, self.planned, self.model = kind, planned_steps, model
        self.make_encoder, self.valid_loss = make_encoder, valid_loss
        self.steps = snapshot_steps(planned_steps, n)
        self.sets = {
            s["word"]: {"sentences": [t for t, _ in s["sentences"]], "labels": [lab for _, lab in s["sentences"]]}
            for s in EXAMPLE_SETS.values()
        }
        self.snapshots: list[dict] = []
        self.arrays: dict[str, list[np.ndarray]] = {}
        self.layer_names: list[str] = []
        self.meta: dict = {}

    def due(self, step: int) -> bool:
        done = {s["step"] for s in self.snapshots}
        return step in self.steps and step not in done

    def maybe_record(self, step: int, tokens: int, wall_s: float, train_loss: float | None, force: bool = False):
        if force and any(s["step"] == step for s in self.snapshots):
            return
        if force or self.due(step):
            self.record(step, tokens, wall_s, train_loss)

    def record(self, step: int, tokens: int, wall_s: float, train_loss: float | None):
        import torch

        t0 = time.time()
        model = self.model
        was = model.training  # read before make_encoder: an Encoder puts its model in eval mode
        enc = self.make_encoder()
        model.eval()
        # the encoders read on the CPU: a model training on CUDA visits it for the measurements (the same
        # parameter objects move, so the optimizer keeps them), then the validation loss runs where it trains
        dev = next(model.parameters()).device
        try:
            with torch.no_grad():
                if dev.type != "cpu":
                    model.to("cpu")
                try:
                    snap, arrays = self._measure(enc)
                finally:
                    model.to(dev)
                snap["valid_loss"] = round(float(self.valid_loss()), 4)
        finally:
            model.train(was)
        snap.update(
            {
                "step": int(step),
                "tokens": int(tokens),
                "wall_s": round(float(wall_s), 1),
                "train_loss": None if train_loss is None else round(float(train_loss), 4),
            }
        )
        self.snapshots.append(snap)
        for k, v in arrays.items():
            self.arrays.setdefault(k, []).append(v)
        log.info(
            "timeline snapshot at step %d (%.1f s): sense accuracy %s",
            step,
            time.time() - t0,
            snap["sense_accuracy_mean"],
        )

    def _measure(self, enc) -> tuple[dict, dict]:
        self.layer_names = list(enc.layer_names)
        vecs, acc, pr = [], {}, []
        for w, s in self.sets.items():
            V = enc.word_vectors(s["sentences"], w)  # (n, L, D)
            vecs.append(V)
            acc[w] = [round(loo_centroid_accuracy(V[:, j], s["labels"]), 4) for j in range(V.shape[1])]
            pr.append([pair_ranking(V[:, j], s["labels"]) for j in range(V.shape[1])])
        q, scale = _quantize(np.concatenate(vecs))
        arrays = {"vectors_q": q, "vectors_scale": scale}
        snap = {
            "sense_accuracy": acc,
            "sense_accuracy_mean": [round(float(x), 4) for x in np.mean(list(acc.values()), 0)],
            "pair_ranking_mean": [round(float(x), 4) for x in np.mean(pr, 0)],
            "fill_mask": None,
            "lm": None,
        }
        if hasattr(enc, "fill_mask"):
            snap["fill_mask"] = [
                [[t, round(p, 4)] for t, p in enc.fill_mask(t, topk=5)[0]["candidates"]] for t in FILL_MASK_SENTENCES
            ]
        if hasattr(enc, "lm_topk"):
            lm = []
            for item in self.lm_items(enc):
                r = enc.lm_topk(item["text"], item["index"], k=5)
                lm.append({d: [[w, round(p, 4)] for w, p in r[d]] for d in ("forward", "backward")})
            snap["lm"] = lm
        elif hasattr(enc, "next_char"):  # GPT: the next character after the text before each blank
            snap["lm"] = [
                {"forward": [[c, round(p, 4)] for c, p in enc.next_char(item["text"][: item["start"]], topk=5)]}
                for item in self.lm_items(enc)
            ]
        if self.kind in ("bert", "gpt"):  # the Transformers: attention of the fixed sentences
            encs = enc.encode(ATTENTION_SENTENCES)
            for i, e in enumerate(encs):
                arrays[f"attention_{i}"] = e.attentions.astype(np.float16)
            self.meta["attention_tokens"] = [e.tokens for e in encs]
        return snap, arrays

    def lm_items(self, enc) -> list[dict]:
        """The fill-mask sentences with the blank filled, and the token holding it: a word for ELMo (it predicts
        words), the character for GPT; `start` is the token's first character (GPT reads the text before it)."""
        if "lm_sentences" not in self.meta:
            items = []
            for text, a in zip(FILL_MASK_SENTENCES, FILL_MASK_ANSWERS):
                i = text.index("[MASK]")
                full = text.replace("[MASK]", a)
                toks = enc.tokenize(full, None)
                k = next(j for j, (_, s, e) in enumerate(toks) if s <= i < e)
                items.append({"text": full, "index": k, "word": toks[k][0], "start": toks[k][1]})
            self.meta["lm_sentences"] = items
        return self.meta["lm_sentences"]

    # -- files -----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "kind": self.kind,
            "layer_names": self.layer_names,
            "planned_steps": self.planned,
            "sets": self.sets,
            "fill_mask_sentences": FILL_MASK_SENTENCES if self.kind == "bert" else [],
            "lm_sentences": self.meta.get("lm_sentences", []),
            "attention_sentences": ATTENTION_SENTENCES if self.meta.get("attention_tokens") else [],
            "attention_tokens": self.meta.get("attention_tokens", []),
            "snapshots": self.snapshots,
        }

    def save(self, directory) -> None:
        d = Path(directory)
        buf = io.BytesIO()
        # snapshot k is row k of every array: an array that some snapshots lack (a GPT run begun before its
        # attention was recorded, then resumed) is left out rather than misaligned
        keep = {k: v for k, v in self.arrays.items() if len(v) == len(self.snapshots)}
        for k in self.arrays.keys() - keep.keys():
            log.warning(
                "timeline: %s has %d rows for %d snapshots; not saved", k, len(self.arrays[k]), len(self.snapshots)
            )
        np.savez_compressed(buf, **{k: _stack(v) for k, v in keep.items()})
        checkpoint.atomic_write_bytes(d / "timeline.npz", buf.getvalue())
        checkpoint.atomic_write_json(d / "timeline.json", self.to_json())

    def load_existing(self, directory) -> None:
        """Continue a resumed run's timeline (snapshots after its last step are dropped)."""
        try:
            data, arrays = load(directory)
        except (OSError, ValueError, KeyError):
            return
        self.snapshots = data["snapshots"]
        self.layer_names = data["layer_names"]
        self.meta = {k: data[k] for k in ("lm_sentences", "attention_tokens") if data.get(k)}
        n = len(self.snapshots)
        self.arrays = {k: [a[i] for i in range(min(n, len(a)))] for k, a in arrays.items()}


def _stack(rows: list[np.ndarray]) -> np.ndarray:
    """Snapshots' arrays can differ in length along token axes (attention of a sentence stays the same length)."""
    return np.stack(rows)


def load(directory) -> tuple[dict, dict[str, np.ndarray]]:
    """(timeline.json contents, arrays) of a checkpoint folder; ValueError with the file named if unreadable."""
    d = checkpoint.resolve(directory)
    jf, nf = d / "timeline.json", d / "timeline.npz"
    try:
        data = json.loads(jf.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}, expected {SCHEMA}")
        with np.load(nf, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except FileNotFoundError as e:
        raise ValueError(f"{d} has no training timeline ({Path(e.filename).name} missing)") from e
    except (ValueError, OSError, KeyError) as e:
        raise ValueError(f"{jf.name}/{nf.name} in {d} cannot be read ({e})") from e
    return data, arrays
