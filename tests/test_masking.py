"""BERT's batch collation and masking, checked exactly on hand-made inputs (test_bert_data.py checks proportions on
real examples)."""

import numpy as np
import pytest
import torch

from ctxlib.training.bert_data import MASK_RATE, collate, mask_tokens


class Tok:
    itos = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("甲乙丙丁戊己庚辛壬癸")
    n_special, mask_id = 5, 4


def _ex(ids, seg, masked, is_next):
    return {
        "ids": np.array(ids),
        "segment_ids": np.array(seg),
        "is_next": is_next,
        "masked": [{"index": i, "original_id": o} for i, o in masked],
    }


def test_collate_pads_and_flattens_the_masked_positions():
    batch = collate(
        [
            _ex([2, 9, 4, 3], [0, 0, 0, 0], [(2, 7)], True),
            _ex([2, 5, 3, 4, 6, 3], [0, 0, 0, 1, 1, 1], [(3, 8), (4, 6)], False),
            _ex([2, 4, 3, 5, 3], [0, 0, 0, 1, 1], [(1, 9)], True),
        ],
        pad_id=0,
    )
    assert batch["ids"].tolist() == [[2, 9, 4, 3, 0, 0], [2, 5, 3, 4, 6, 3], [2, 4, 3, 5, 3, 0]]
    assert batch["segment_ids"].tolist() == [[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]]
    assert batch["mlm_pos"].tolist() == [2, 6 + 3, 6 + 4, 12 + 1]  # flat indices into B * T (T = 6, the longest)
    assert batch["mlm_labels"].tolist() == [7, 8, 6, 9]  # the original ids, not what the input now holds
    assert batch["nsp"].tolist() == [1, 0, 1]
    assert all(batch[k].dtype == torch.long for k in ("ids", "segment_ids", "mlm_pos", "mlm_labels", "nsp"))
    assert collate([_ex([2, 3], [0, 0], [], False), _ex([2, 9, 9, 3], [0, 0, 1, 1], [], True)], pad_id=1)[
        "ids"
    ].tolist() == [[2, 3, 1, 1], [2, 9, 9, 3]]


def test_mask_tokens_counts_kinds_and_replacements():
    rng = np.random.default_rng(0)
    kinds, n_seen = {"mask": 0, "random": 0, "kept": 0}, 0
    for _ in range(400):
        ids = np.array([2] + list(rng.integers(5, 15, 38)) + [3])
        groups = np.array([-1] + list(range(38)) + [-1])
        orig = ids.copy()
        out = mask_tokens(rng, ids, groups, Tok)
        assert len(out) == round(38 * MASK_RATE) == 6 and [m["index"] for m in out] == sorted({m["index"] for m in out})
        assert all(1 <= m["index"] <= 38 for m in out)  # never [CLS] or [SEP]
        changed = {int(i) for i in np.nonzero(ids != orig)[0]}
        assert changed <= {m["index"] for m in out}
        for m in out:
            i = m["index"]
            assert m["original_id"] == orig[i] and m["original"] == Tok.itos[orig[i]]
            assert m["replacement"] == Tok.itos[ids[i]]
            kinds[m["kind"]] += 1
            if m["kind"] == "mask":
                assert ids[i] == Tok.mask_id
            elif m["kind"] == "kept":
                assert ids[i] == orig[i]
            else:
                assert ids[i] >= Tok.n_special
            n_seen += 1
    assert kinds["mask"] / n_seen == pytest.approx(0.8, abs=0.04)
    assert kinds["random"] / n_seen == pytest.approx(0.1, abs=0.03) and kinds["kept"] / n_seen == pytest.approx(
        0.1, abs=0.03
    )


def test_mask_tokens_whole_words_and_edge_cases():
    rng = np.random.default_rng(1)
    ids = np.array([2] + [5] * 20 + [3])
    groups = np.array([-1] + [g for g in range(10) for _ in range(2)] + [-1])  # ten two-character words
    for _ in range(50):
        out = mask_tokens(rng, ids.copy(), groups, Tok, whole_word=True)
        idx = [m["index"] for m in out]
        # 3 of 20 characters to choose, words of two: one word, then every other would overshoot and is skipped
        assert len(idx) == 2 and groups[idx[0]] == groups[idx[1]] and idx[1] == idx[0] + 1
    assert mask_tokens(rng, np.array([2, 3]), np.array([-1, -1]), Tok) == []
    assert len(mask_tokens(rng, np.array([2, 7, 3]), np.array([-1, 0, -1]), Tok)) == 1  # at least one
    with pytest.raises(ValueError, match="whole_word must be a bool or a share between 0 and 1, not 1.5"):
        mask_tokens(rng, ids.copy(), groups, Tok, whole_word=1.5)
