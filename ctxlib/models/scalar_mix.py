"""mixture = gamma * sum_j softmax(w)_j * h_j  (ELMo's task-specific layer mix, Peters et al. 2018, eq. 1).

After AllenNLP's `ScalarMix`: each task learns its own softmax-normalised layer weights s_j = softmax(w)_j
and a scale gamma. Optionally each layer is layer-normalised first (over the unmasked positions), and
the paper's regulariser lambda * ||w||^2 (`penalty()`) pulls the weights towards uniform: with a large
lambda the mix is close to the plain average of the layers.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..analysis import expected_layer
from ..vecmath import EPS


class ScalarMix(nn.Module):
    """gamma * sum_j softmax(w)_j * h_j over n_layers tensors of the same shape (..., D)."""

    def __init__(
        self,
        n_layers: int,
        *,
        do_layer_norm: bool = False,
        l2: float = 0.0,
        initial_scalars: list[float] | None = None,
        trainable: bool = True,
    ):
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        if l2 < 0:
            raise ValueError(f"l2 must be >= 0, got {l2}")
        if initial_scalars is None:
            initial_scalars = [0.0] * n_layers
        if len(initial_scalars) != n_layers:
            raise ValueError(f"initial_scalars has {len(initial_scalars)} values for {n_layers} layers")
        self.n_layers, self.do_layer_norm, self.l2 = n_layers, do_layer_norm, float(l2)
        self.scalars = nn.Parameter(torch.tensor([float(x) for x in initial_scalars]), requires_grad=trainable)
        self.gamma = nn.Parameter(torch.tensor(1.0), requires_grad=trainable)

    def weights(self) -> torch.Tensor:
        """softmax(w): the layer weights s_j, shape (n_layers,)."""
        return torch.softmax(self.scalars, dim=0)

    def penalty(self) -> torch.Tensor:
        """The paper's regulariser l2 * ||w||^2 (add it to the task loss)."""
        return self.l2 * (self.scalars**2).sum()

    @staticmethod
    def _layer_norm(h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Normalise h (..., D) by the mean and variance over all unmasked positions and features."""
        if mask is None:
            mean, var = h.mean(), h.var(unbiased=False)
        else:
            m = mask.to(h.dtype).unsqueeze(-1)  # (..., 1)
            n = (m.sum() * h.size(-1)).clamp_min(1.0)
            mean = (h * m).sum() / n
            var = (((h - mean) * m) ** 2).sum() / n
        return (h - mean) / torch.sqrt(var + EPS)

    def forward(self, tensors, mask: torch.Tensor | None = None) -> torch.Tensor:
        """tensors: a list of n_layers tensors (..., D) or one tensor (n_layers, ..., D); mask (...) for layer norm."""
        if isinstance(tensors, torch.Tensor):
            tensors = list(tensors.unbind(0))
        if len(tensors) != self.n_layers:
            raise ValueError(f"got {len(tensors)} layers, expected {self.n_layers}")
        shape = tensors[0].shape
        if any(t.shape != shape for t in tensors):
            raise ValueError("all layers must have the same shape")
        s = self.weights()
        out = 0
        for j, h in enumerate(tensors):
            if self.do_layer_norm:
                h = self._layer_norm(h, mask)
            out = out + s[j] * h
        return self.gamma * out

    def expected_layer(self) -> float:
        """sum_j j * s_j: where the mix sits, from 0 (token layer) to n_layers - 1."""
        return expected_layer(self.weights().detach().cpu().tolist())

    def extra_repr(self) -> str:
        return f"n_layers={self.n_layers}, do_layer_norm={self.do_layer_norm}, l2={self.l2}"
