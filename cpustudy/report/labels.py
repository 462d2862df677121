"""Labels set apart on a drawn chart: none over another or over a point, each inside its panel.

plotnine's own ``adjust_text=`` (adjustText) does not manage it on the answer chart: it runs while each layer
is drawn, before the layout shrinks the panel to make room for the titles, legend and caption, and for each
layer and colour apart, so the labels of close candidates still printed over one another; adjustText run on
all the labels once the figure is laid out did not settle either (boxes of different shapes, a vertical label
beside a horizontal one). Here each label takes, in turn, the free place nearest to what it labels, found on
the laid-out figure: the place its alignment asks for where that is free, else the nearest of a grid of
places over the panel, joined to what it labels by a thin line. The same chart every time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from plotnine import ggplot

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text

#: Room kept between a label and what it labels, another label, a point or the panel's edge (points).
GAP_PT = 2.0
#: The grid of places a label is tried at: steps of this fraction of its width and of its height.
STEP = 0.25


class LabelledPlot(ggplot):
    """A ggplot whose labels are set apart (:func:`set_apart`) once it is drawn; ``save`` draws through it."""

    def draw(self, *, show: bool = False) -> Figure:
        figure = super().draw(show=False)
        set_apart(figure)
        if show:
            import matplotlib.pyplot as plt

            plt.figure(figure)  # plotnine closed it after drawing: managed again, to be shown
            plt.show()
        return figure


def set_apart(figure: Figure) -> None:
    """Lay ``figure`` out and move the texts of each of its panels (boxed labels or plain) so that none lies
    over another or over a point, each inside its panel: see the module."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)  # to measure the labels with; savefig uses each format's own canvas
    engine = figure.get_layout_engine()
    if engine is not None:
        engine.execute(figure)  # the panels' final place and size, as savefig lays them out again
    renderer = canvas.get_renderer()
    for ax in figure.axes:
        _set_apart(ax, renderer, GAP_PT * figure.dpi / 72)


def _markers(ax: Axes) -> np.ndarray:
    """The panel's points on the canvas: one row (x, y, radius) each."""
    from matplotlib.collections import PathCollection

    rows = []
    for c in ax.collections:
        offsets = np.asarray(c.get_offsets())
        if not isinstance(c, PathCollection) or not len(offsets):
            continue
        xy = c.get_offset_transform().transform(offsets)
        sizes = np.resize(np.asarray(c.get_sizes(), dtype=float), len(xy)) if len(c.get_sizes()) else np.zeros(len(xy))
        rows.append(np.column_stack([xy, np.sqrt(sizes) / 2 * ax.figure.dpi / 72]))  # size: area in points²
    return np.vstack(rows) if rows else np.empty((0, 3))


def _box(t: Text, renderer: RendererBase) -> np.ndarray:
    """A text's extent on the canvas, its drawn box around it where it has one: x0, y0, x1, y1."""
    patch = t.get_bbox_patch()
    if patch is not None:
        t.update_bbox_position_size(renderer)  # else placed only when the text is drawn
    b = (patch if patch is not None else t).get_window_extent(renderer)
    return np.array([b.x0, b.y0, b.x1, b.y1])


def _places(anchor: np.ndarray, size: np.ndarray, near: float, align: tuple[str, str], panel: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Where a box of ``size`` may go around ``anchor`` inside ``panel`` (lower-left corners), and which of them
    is where its alignment puts it, ``near`` away; the others beside, above, below and over the anchor, and on
    from there to the panel's edges in steps of ``STEP`` of its size."""
    per_axis = []
    for i, how in enumerate(align):
        a, s, lo, hi = anchor[i], size[i], panel[i], panel[i + 2] - size[i]
        step = max(s * STEP, 1.0)
        after, before, centred = a + near, a - near - s, a - s / 2
        first = after if how in ("left", "bottom", "baseline") else before if how in ("right", "top") else centred
        ahead = after + step * np.arange(max(0.0, np.ceil((hi - after) / step)) + 1)
        behind = before - step * np.arange(max(0.0, np.ceil((before - lo) / step)) + 1)
        per_axis.append((first, np.concatenate([[after, before, centred], ahead, behind])))
    (fx, xs), (fy, ys) = per_axis
    gx, gy = np.meshgrid(xs, ys)
    places = np.vstack([[fx, fy], np.column_stack([gx.ravel(), gy.ravel()])])
    first = np.arange(len(places)) == 0
    inside = (places[:, 0] >= panel[0]) & (places[:, 1] >= panel[1]) & (places[:, 0] <= panel[2] - size[0]) & (
        places[:, 1] <= panel[3] - size[1])
    return places[inside], first[inside]


def _set_apart(ax: Axes, renderer: RendererBase, gap: float) -> None:
    texts = [t for t in ax.texts if t.get_visible() and t.get_text()]
    if not texts:
        return
    p = ax.get_window_extent(renderer)
    panel = np.array([p.x0 + gap / 2, p.y0 + gap / 2, p.x1 - gap / 2, p.y1 - gap / 2])
    marks = _markers(ax)
    taken = [np.column_stack([marks[:, :2] - marks[:, 2:], marks[:, :2] + marks[:, 2:]])]
    anchors = [t.get_transform().transform(t.get_position()) for t in texts]
    on_point = [marks[np.hypot(*(marks[:, :2] - a).T) < 1.0, 2] if len(marks) else np.empty(0) for a in anchors]
    # labels of no point first (a line's, set along it: they read as its only beside it), then the points'
    for i in sorted(range(len(texts)), key=lambda i: (len(on_point[i]) > 0, i)):
        t, anchor, on = texts[i], anchors[i], on_point[i]
        box = _box(t, renderer)
        size = box[2:] - box[:2]
        near = gap + (on.max() if len(on) else 0.0)  # clear of its own point
        places, aligned = _places(anchor, size, near, (t.get_horizontalalignment(), t.get_verticalalignment()), panel)
        if not len(places):  # larger than its panel: left where it is
            taken.append(box[None, :])
            continue
        obstacles = np.vstack(taken)
        lo, hi = places - gap, places + size + gap  # kept ``gap`` clear of what is there
        across = (np.minimum(hi[:, None, 0], obstacles[:, 2]) - np.maximum(lo[:, None, 0], obstacles[:, 0])).clip(0)
        up = (np.minimum(hi[:, None, 1], obstacles[:, 3]) - np.maximum(lo[:, None, 1], obstacles[:, 1])).clip(0)
        overlap = (across * up).sum(axis=1)
        dx = np.maximum.reduce([places[:, 0] - anchor[0], anchor[0] - places[:, 0] - size[0], np.zeros(len(places))])
        dy = np.maximum.reduce([places[:, 1] - anchor[1], anchor[1] - places[:, 1] - size[1], np.zeros(len(places))])
        far = np.hypot(dx, dy)
        # free places first (the least covered where none is): where its alignment puts it, else the nearest
        best = np.lexsort((np.arange(len(places)), np.where(aligned, 0.0, far), overlap))[0]
        new = np.concatenate([places[best], places[best] + size])
        x, y = t.get_transform().inverted().transform(anchor + new[:2] - box[:2])
        t.set_position((float(x), float(y)))
        taken.append(new[None, :])
        if max(dx[best], dy[best]) > near + gap:  # away from what it labels: a thin line to it
            _connector(ax, t, anchor, new, near - gap)


def _connector(ax: Axes, t: Text, anchor: np.ndarray, box: np.ndarray, start: float) -> None:
    """A thin line in the label's colour from ``start`` px off ``anchor`` (its point's edge) to the nearest
    point of the label's box."""
    from matplotlib.lines import Line2D

    end = np.clip(anchor, box[:2], box[2:])
    d = end - anchor
    begin = anchor + d / np.hypot(*d) * start if start > 0 else anchor
    xy = ax.transData.inverted().transform(np.vstack([begin, end]))
    ax.add_artist(Line2D(xy[:, 0], xy[:, 1], color=t.get_color(), alpha=0.7, linewidth=0.6,
                       zorder=t.get_zorder() - 0.1))
