"""Pure plot builder for a live training run (the training page's "Train live"): the loss as the job reports it."""

from __future__ import annotations

import plotly.graph_objects as go

from .common import PALETTE, base_layout, escape


def live_loss_figure(points: list[dict], labels: dict[str, str], height: int = 300) -> go.Figure:
    """Training loss over seconds of training (`points`: the job's {"s", "loss", ...}; points without a loss are
    left out). labels: title, seconds, loss."""
    pts = [p for p in points if p.get("loss") is not None]
    data = [
        dict(
            type="scatter",
            mode="lines+markers",
            x=[p["s"] for p in pts],
            y=[p["loss"] for p in pts],
            line=dict(color=PALETTE[0], width=2),
            marker=dict(size=4),
            name=escape(labels["loss"]),
            hovertemplate="%{x:.1f} s: %{y:.3f}<extra></extra>",
        )
    ]
    return go.Figure(
        dict(
            data=data,
            layout=base_layout(
                (10, 10, 50, 30),
                hover=True,
                title=dict(text=escape(labels["title"]), y=0.97, yanchor="top"),
                height=height,
                plot_bgcolor="white",
                showlegend=False,
                xaxis=dict(
                    title=dict(text=escape(labels["seconds"])), showgrid=True, gridcolor="#eee", rangemode="tozero"
                ),
                yaxis=dict(title=dict(text=escape(labels["loss"])), showgrid=True, gridcolor="#eee"),
            ),
        )
    )
