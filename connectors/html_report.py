"""The HTML report target: one self-contained page (plotly.js inlined, no network at view time).

``dumps(report) -> str`` renders the dict :func:`recommender.report.page_data.report_data` builds,
with the jinja2 template ``templates/report.html.j2``; ``dump(report, path)`` writes it
atomically. The map is a plotly scatter (SVG, so it also draws where WebGL is missing).
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from connectors._io import atomic_write_text

COLOURS = {"library": "#1f6fb4", "collection": "#b8b8b8", "pick": "#d62728"}
LEGEND = {"library": "your library", "collection": "the collection", "pick": "picks (numbered)"}


def figure(report: dict[str, Any]) -> dict[str, Any]:
    """The map as a plotly figure dict: one trace per kind of paper, topic labels as annotations."""
    import plotly.graph_objects as go  # heavy; only the HTML path needs it

    points = report["points"]
    fig = go.Figure()
    for kind in ("collection", "library", "pick"):
        index = [i for i, k in enumerate(points["kind"]) if k == kind]
        if not index:
            continue
        hover = []
        for i in index:
            text = points["title"][i]
            if points["rank"][i] is not None:
                text = f"#{points['rank'][i]} {text}"
            if points["score"][i] is not None:
                text += f" ({points['score'][i]:.3f})"
            hover.append(text)
        is_pick = kind == "pick"
        fig.add_trace(go.Scatter(
            x=[points["x"][i] for i in index], y=[points["y"][i] for i in index],
            mode="markers+text" if is_pick else "markers", name=LEGEND[kind],
            text=[str(points["rank"][i]) for i in index] if is_pick else None,
            textposition="top center", textfont={"size": 10, "color": COLOURS[kind]},
            hovertext=hover, hoverinfo="text",
            customdata=[points["rank"][i] for i in index] if is_pick else None,
            marker={"color": COLOURS[kind], "size": 11 if is_pick else 6 if kind == "library" else 5,
                    "opacity": 1.0 if is_pick else 0.8 if kind == "library" else 0.55,
                    "symbol": "diamond" if kind == "library" else "circle",
                    "line": {"width": 1, "color": "white"} if is_pick else {"width": 0}},
        ))
    for topic in report["topics"]:
        fig.add_annotation(x=topic["x"], y=topic["y"], text=topic["label"], showarrow=False,
                           font={"size": 12, "color": "#333"}, bgcolor="rgba(255,255,255,0.75)")
    fig.update_layout(
        margin={"l": 10, "r": 10, "t": 10, "b": 10}, height=560, hovermode="closest",
        plot_bgcolor="white", paper_bgcolor="white", dragmode="pan",
        legend={"orientation": "h", "yanchor": "bottom", "y": 0.0, "xanchor": "left", "x": 0.0},
        xaxis={"visible": False}, yaxis={"visible": False},
    )
    return json.loads(fig.to_json())


@lru_cache(maxsize=1)
def _template():
    import jinja2

    source = resources.files(__package__).joinpath("templates", "report.html.j2").read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                     undefined=jinja2.StrictUndefined)
    return environment.from_string(source)


def dumps(report: dict[str, Any]) -> str:
    """The page for ``report`` (see :func:`recommender.report.page_data.report_data`)."""
    from plotly.offline import get_plotlyjs

    return _template().render(report=report, figure=figure(report), plotly_js=get_plotlyjs())


def dump(report: dict[str, Any], path: str | Path) -> None:
    """Write the page for ``report`` to ``path`` atomically."""
    atomic_write_text(path, dumps(report))
