"""Worker for the DDP equivalence test (a module of its own so torch.multiprocessing's spawn can import it)."""

import os

import torch

from ctxlib.models.bert import BertConfig, BertModel
from ctxlib.training.trainer import TrainConfig, Trainer

STEPS = 4


def tiny_model(seed: int = 0) -> BertModel:
    torch.manual_seed(seed)
    return BertModel(
        BertConfig(vocab_size=40, hidden=32, layers=2, heads=2, ffn=64, max_len=32, dropout=0.0, attn_dropout=0.0)
    )


def global_batches(n_steps: int = STEPS, per_rank: int = 4, T: int = 12, n_mask: int = 3, seed: int = 1):
    """Fixed global batches of 2 * per_rank examples; every example has n_mask masked positions, so each half
    holds the same number of loss terms and the mean over halves equals the mean over the whole batch."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_steps):
        B = 2 * per_rank
        ids = torch.randint(5, 40, (B, T), generator=g)
        ids[:, 0] = 2
        pos, lab = [], []
        for b in range(B):
            for i in torch.randperm(T - 1, generator=g)[:n_mask] + 1:
                pos.append(b * T + int(i))
                lab.append(int(ids[b, i]))
                ids[b, i] = 4
        out.append(
            {
                "ids": ids,
                "segment_ids": torch.zeros_like(ids),
                "mlm_pos": torch.tensor(pos),
                "mlm_labels": torch.tensor(lab),
                "nsp": torch.randint(0, 2, (B,), generator=g),
            }
        )
    return out


def half(batch: dict, rank: int, world: int = 2) -> dict:
    B, T = batch["ids"].shape
    per = B // world
    lo, hi = rank * per, (rank + 1) * per
    keep = (batch["mlm_pos"] >= lo * T) & (batch["mlm_pos"] < hi * T)
    return {
        "ids": batch["ids"][lo:hi],
        "segment_ids": batch["segment_ids"][lo:hi],
        "mlm_pos": batch["mlm_pos"][keep] - lo * T,
        "mlm_labels": batch["mlm_labels"][keep],
        "nsp": batch["nsp"][lo:hi],
    }


def config() -> TrainConfig:
    return TrainConfig(steps=STEPS, lr=1e-2, warmup=1, amp="off", clip=1.0, progress=False, log_every=1)


def run(rank: int, world: int, store: str, out: str) -> None:
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        model = tiny_model()
        batches = [half(b, rank, world) for b in global_batches()]
        summary = Trainer(model, batches, config(), device="cpu").run()
        if rank == 0:
            torch.save({"params": model.state_dict(), "tokens": summary["tokens_seen"]}, os.path.join(out, "ddp.pt"))
        torch.distributed.barrier()  # both ranks leave together
    finally:
        torch.distributed.destroy_process_group()
    # The work is done and written; leave without the interpreter's teardown, where gloo's threads made a spawned
    # worker abort about once in 15 runs ("terminate called without an active exception", SIGABRT). A failure above
    # still raises before this line and fails the test.
    os._exit(0)
