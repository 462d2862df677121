"""The look of cpustudy's charts: the plotnine theme and the colours of builds.

Colour families (light -> dark): GPU reds, pip/stock blues, compiled greens, then other families; a
configuration gets its build's family, darker for more vCPUs.
"""

from __future__ import annotations

import pandas as pd
from plotnine import element_blank, element_line, element_rect, element_text, theme, theme_minimal

from cpustudy.analysis.studies import STOCK_BUILDS

FAMILIES = {
    "gpu": ["#fcae91", "#fb6a4a", "#de2d26", "#a50f15"],
    "stock": ["#bdd7e7", "#6baed6", "#3182bd", "#08519c"],
    "compiled": ["#bae4b3", "#74c476", "#31a354", "#006d2c"],
}


OTHER_FAMILIES = [
    ["#cbc9e2", "#9e9ac8", "#756bb1", "#54278f"],  # purples
    ["#fdbe85", "#fd8d3c", "#e6550d", "#a63603"],  # oranges
    ["#d4b9da", "#c994c7", "#dd1c77", "#980043"],  # pinks
    ["#c7e9b4", "#7fcdbb", "#2c7fb8", "#253494"],  # teals
    ["#d9d9d9", "#969696", "#636363", "#252525"],  # greys
]


class theme_cpustudy(theme_minimal):
    """``theme_minimal`` with a bold title, no minor grid, muted captions and facet strips, the legend
    below the chart and a white background (saved PNGs are not transparent).

    A complete theme, like plotnine's own: added to a ggplot it replaces the theme there; partial
    ``theme(...)`` added after it adjust it.

    Parameters
    ----------
    base_size : float
        Base font size; titles, captions and strips are scaled from it.
    base_family : str
        Base font family; ``None`` uses plotnine's default.
    """

    def __init__(self, base_size: float = 11, base_family: str | None = None) -> None:
        super().__init__(base_size, base_family)
        self += theme(
            plot_title=element_text(weight="bold", size=base_size * 1.25, ha="left"),
            plot_subtitle=element_text(color="#444444", size=base_size * 0.95, ha="left"),
            plot_caption=element_text(color="#666666", size=base_size * 0.75, ha="right"),
            panel_grid_minor=element_blank(),
            panel_grid_major=element_line(color="#e5e5e5", size=0.5),
            axis_text=element_text(color="#333333"),
            axis_title=element_text(color="#333333", size=base_size * 0.95),
            strip_text=element_text(weight="bold", size=base_size * 0.9),
            strip_background=element_rect(fill="#f2f2f2", color="none"),
            legend_position="bottom",
            plot_background=element_rect(fill="white", color="white"),
        )


def build_family(build: str, device: str) -> str:
    if device == "gpu":
        return "gpu"
    if build in STOCK_BUILDS:
        return "stock"
    if build == "compiled" or "compiled" in build or "march" in build:
        return "compiled"
    return "other"


def colour_map(df: pd.DataFrame) -> dict[str, str]:
    """label -> colour: the build's family, darker for more vCPUs."""
    others: dict[str, list[str]] = {}
    colours: dict[str, str] = {}
    for (build, device), g in df.groupby(["build", "device"], sort=True):
        fam = build_family(build, device)
        if fam == "other":
            if build not in others:
                others[build] = OTHER_FAMILIES[len(others) % len(OTHER_FAMILIES)]
            palette = others[build]
        else:
            palette = FAMILIES[fam]
        counts = sorted({int(v) for v in g["vcpus"].dropna()})
        for r in g.itertuples():
            if len(counts) <= 1 or pd.isna(r.vcpus):
                colours[r.label] = palette[2]
            else:
                i = counts.index(int(r.vcpus))
                colours[r.label] = _shade(palette, i / (len(counts) - 1))
    return colours


def _shade(palette: list[str], t: float) -> str:
    """A colour along the palette from its second (t=0) to its last entry (t=1)."""
    stops = palette[1:]
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    f = pos - i
    a, b = _rgb(stops[i]), _rgb(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def _rgb(hexcolour: str) -> tuple[int, int, int]:
    h = hexcolour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def build_colour(build: str, device: str, others: dict[str, str]) -> str:
    fam = build_family(build, device)
    if fam == "other":
        if build not in others:
            others[build] = OTHER_FAMILIES[len(others) % len(OTHER_FAMILIES)][2]
        return others[build]
    return FAMILIES[fam][2]
