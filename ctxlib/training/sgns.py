"""word2vec's two embedding tables and their negative-sampling updates (`SGNS`), driven by
ctxlib.training.word2vec. These batched torch updates train on CUDA (and on CPU with backend="torch");
the CPU default is the compiled sequential kernel in ctxlib.training.sgns_numba, which uses the tables
made here (same initialisation) but neither the batches nor the row cap.

For speed the updates are hand-written (no autograd) and batched: a batch holds the
windows of `batch_size` center words, gathered with index_select, scored with bmm and
written back with index_add_. Skip-gram shares one set of `negative` samples across
the context words of a window (the "negative sample sharing" of Ji et al. 2016,
"Parallelizing Word2Vec in Shared and Distributed Memory"), which turns many small
dot products into one small matrix product; `shared_negatives=False` draws them per
(context, center) pair, as gensim does. A summed batch update cannot correct itself the
way sequential SGD does, so a row hit more than `max_row_updates` times in one step has
its update scaled down (without this, rare bursts blew single rows up to norms of 200).
"""

from __future__ import annotations

from ..models.word2vec import Word2VecConfig


class SGNS:
    """The two embedding tables and the hand-written negative-sampling updates."""

    def __init__(self, n_words: int, cfg: Word2VecConfig, device):
        import torch

        g = torch.Generator().manual_seed(cfg.seed)
        self.cfg, self.device = cfg, device
        # gensim's init: inputs uniform in +-0.5/dim, outputs zero
        self.w_in = ((torch.rand(n_words, cfg.dim, generator=g) - 0.5) / cfg.dim).to(device)  # (V, D)
        self.w_out = torch.zeros(n_words, cfg.dim, device=device)  # (V, D)
        self.label = torch.zeros(cfg.negative + 1, device=device)
        self.label[0] = 1.0

    def step_windows(self, center, ctx, valid, neg, lr: float, with_loss: bool = True) -> float:
        """One SGD step on B windows. center (B,), ctx/valid (B, C), neg (B, K). Returns the summed loss (or 0)."""
        import torch

        D = self.cfg.dim
        tgt = torch.cat([center[:, None], neg], 1)  # (B, K+1): the center word, then negatives
        keep = torch.cat([torch.ones_like(center[:, None], dtype=torch.bool), neg != center[:, None]], 1)  # (B, K+1)
        label = self.label  # (K+1,): 1 for the center word, 0 for negatives
        vf = valid.float()  # (B, C)
        h_ctx = self.w_in.index_select(0, ctx.reshape(-1)).view(*ctx.shape, D)  # (B, C, D)
        c = self.w_out.index_select(0, tgt.reshape(-1)).view(*tgt.shape, D)  # (B, K+1, D)
        if self.cfg.sg:
            f = torch.bmm(h_ctx, c.transpose(1, 2))  # (B, C, K+1)
            mask = vf[:, :, None] * keep[:, None, :]  # (B, C, K+1)
            g = (label - torch.sigmoid(f)) * mask * lr  # (B, C, K+1)
            d_in = torch.bmm(g, c)  # (B, C, D)
            d_out = torch.bmm(g.transpose(1, 2), h_ctx)  # (B, K+1, D)
            hits = vf.sum(1)  # (B,): each target row of a window is updated once per valid context
        else:  # CBOW: the mean of the context vectors predicts the center
            n = vf.sum(1, keepdim=True).clamp(min=1.0)  # (B, 1)
            h = (h_ctx * vf[:, :, None]).sum(1) / n  # (B, D)
            f = torch.bmm(c, h[:, :, None]).squeeze(2)  # (B, K+1)
            mask = keep * (vf.sum(1, keepdim=True) > 0)  # (B, K+1)
            g = (label - torch.sigmoid(f)) * mask * lr  # (B, K+1)
            d_in = torch.bmm(g[:, None, :], c).expand(-1, ctx.shape[1], -1) * vf[:, :, None]  # (B, C, D)
            d_out = g[:, :, None] * h[:, None, :]  # (B, K+1, D)
            hits = (vf.sum(1) > 0).float()  # (B,)
        if self.cfg.max_row_updates:
            d_out, d_in = self._cap_rows(d_out, tgt, hits[:, None].expand(tgt.shape), d_in, ctx, vf)
        self.w_out.index_add_(0, tgt.reshape(-1), d_out.reshape(-1, D))
        self.w_in.index_add_(0, ctx.reshape(-1), d_in.reshape(-1, D))
        if not with_loss:
            return 0.0
        return float(-(torch.nn.functional.logsigmoid(torch.where(label > 0, f, -f)) * mask).sum())

    def _cap_rows(self, d_out, tgt, out_hits, d_in, ctx, in_hits):
        """(d_out, d_in) with the updates of rows that sum n > max_row_updates contributions in this step scaled
        by max_row_updates / n (output rows counted at tgt, input rows at ctx, both in one bincount).

        Sequential SGD corrects itself after each of a row's updates; a summed batch update cannot, and a row
        hit hundreds of times in one step (a run of the same word, a very frequent negative) can overshoot."""
        import torch

        V = len(self.w_in)
        idx = torch.cat([tgt.reshape(-1), ctx.reshape(-1) + V])  # output rows, then input rows
        n = torch.bincount(idx, torch.cat([out_hits.reshape(-1), in_hits.reshape(-1)]).float(), 2 * V)  # (2V,)
        if float(n.max()) <= self.cfg.max_row_updates:  # the usual case: plain SGD
            return d_out, d_in
        scale = (self.cfg.max_row_updates / n.clamp(min=1)).clamp(max=1.0)
        return d_out * scale[tgt].unsqueeze(-1), d_in * scale[ctx + V].unsqueeze(-1)

    def step_pairs(self, center, ctx, neg, lr: float) -> float:
        """gensim's exact skip-gram: P (context, center) pairs, K fresh negatives each. center/ctx (P,), neg (P, K)."""
        import torch

        D = self.cfg.dim
        tgt = torch.cat([center[:, None], neg], 1)  # (P, K+1)
        keep = torch.cat([torch.ones_like(center[:, None], dtype=torch.bool), neg != center[:, None]], 1).float()
        label = self.label  # (K+1,)
        h = self.w_in.index_select(0, ctx)  # (P, D)
        c = self.w_out.index_select(0, tgt.reshape(-1)).view(*tgt.shape, D)  # (P, K+1, D)
        f = torch.bmm(c, h[:, :, None]).squeeze(2)  # (P, K+1)
        g = (label - torch.sigmoid(f)) * keep * lr  # (P, K+1)
        d_in = torch.bmm(g[:, None, :], c).squeeze(1)  # (P, D)
        d_out = g[:, :, None] * h[:, None, :]  # (P, K+1, D)
        if self.cfg.max_row_updates:
            d_out, d_in = self._cap_rows(
                d_out,
                tgt,
                torch.ones_like(tgt, dtype=torch.float32),
                d_in,
                ctx,
                torch.ones_like(ctx, dtype=torch.float32),
            )
        self.w_out.index_add_(0, tgt.reshape(-1), d_out.reshape(-1, D))
        self.w_in.index_add_(0, ctx, d_in)
        loss = -(torch.nn.functional.logsigmoid(torch.where(label > 0, f, -f)) * keep).sum()
        return float(loss)
