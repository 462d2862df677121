"""The look of cpustudy's charts: the plotnine theme and the colours of builds.

Colours come in families, ramps from light to dark: GPU results in reds whatever their build; CPU
results in the ramp of their build's family, as the run stored it (``build_family``: the recipe's
``family``; guessed from the build's name for older runs and the 2017 study): pip blues, compiled
greens, jax purples, torch oranges. A family without a ramp of its own, or a build of no known family,
gets the next of ``OTHER_FAMILIES``. Bars (:func:`colour_map`) take their build's family, darker for
more vCPUs; a chart with a legend of builds (:func:`build_colours`) gives the builds of one family its
shades in turn, so that the legend tells them apart.
"""

from __future__ import annotations

from typing import Any, Iterable

import pandas as pd
from plotnine import element_blank, element_line, element_rect, element_text, theme, theme_minimal

from cpustudy.analysis.runs import guess_family

FAMILIES = {
    "gpu": ["#fcae91", "#fb6a4a", "#de2d26", "#a50f15"],  # reds
    "pip": ["#bdd7e7", "#6baed6", "#3182bd", "#08519c"],  # blues
    "compiled": ["#bae4b3", "#74c476", "#31a354", "#006d2c"],  # greens
    "jax": ["#cbc9e2", "#9e9ac8", "#756bb1", "#54278f"],  # purples
    "torch": ["#fdbe85", "#fd8d3c", "#e6550d", "#a63603"],  # oranges
}
OTHER_FAMILIES = [
    ["#d4b9da", "#c994c7", "#dd1c77", "#980043"],  # pinks
    ["#c7e9b4", "#7fcdbb", "#2c7fb8", "#253494"],  # teals
    ["#d9d9d9", "#969696", "#636363", "#252525"],  # greys
]
#: The entries of a ramp that builds of one family take in turn in a legend: mid, dark, light, lightest.
LEGEND_SHADES = (2, 3, 1, 0)


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


def colour_family(device: str, build_family: str | None) -> str:
    """The family a result is drawn in: ``gpu`` for a GPU result, else its build's family."""
    return "gpu" if device == "gpu" else str(build_family or "other")


class _Palettes:
    """The ramps of one chart: a family's own, or the next of ``OTHER_FAMILIES`` for a family without
    one (shared by its builds) and for each build of no known family ("other")."""

    def __init__(self) -> None:
        self.others: dict[str, list[str]] = {}

    def __call__(self, family: str, build: str) -> tuple[str, list[str]]:
        """(the key the ramp is shared under, the ramp)."""
        if family in FAMILIES:
            return family, FAMILIES[family]
        key = f"build {build}" if family == "other" else f"family {family}"
        if key not in self.others:
            self.others[key] = OTHER_FAMILIES[len(self.others) % len(OTHER_FAMILIES)]
        return key, self.others[key]


def _families(df: pd.DataFrame) -> pd.Series:
    """Each row's build family: the stored one, or guessed from the build's name where there is none."""
    guessed = (df["recipe"] if "recipe" in df else df["build"]).map(guess_family)
    if "build_family" in df:
        return df["build_family"].where(df["build_family"].notna(), guessed)
    return guessed


def colour_map(df: pd.DataFrame) -> dict[str, str]:
    """label -> colour: the build's family, darker for more vCPUs (over the vCPU counts of the family's
    bars in ``df``, so that bars of one family and vCPU count share their colour)."""
    palettes = _Palettes()
    rows = list(zip(df["build"], df["device"], _families(df)))
    for b, d, f in sorted(set(rows)):  # ramps of other families handed out in the order of build names
        palettes(colour_family(d, f), b)
    ramps = [palettes(colour_family(d, f), b) for b, d, f in rows]
    keys = pd.Series([k for k, _ in ramps], index=df.index)
    counts = {k: sorted({int(v) for v in df.loc[keys == k, "vcpus"].dropna()}) for k in dict.fromkeys(keys)}
    colours: dict[str, str] = {}
    for (key, palette), label, vcpus in zip(ramps, df["label"], df["vcpus"]):
        n = counts[key]
        if len(n) <= 1 or pd.isna(vcpus):
            colours[label] = palette[2]
        else:
            colours[label] = _shade(palette, n.index(int(vcpus)) / (len(n) - 1))
    return colours


def build_colours(df: pd.DataFrame, key: str = "build") -> dict[Any, str]:
    """One colour per value of ``key`` (a build, or e.g. "gpu" for every GPU result): its family's,
    in that family's next legend shade (``LEGEND_SHADES``) when another build of the family came first."""
    palettes = _Palettes()
    taken: dict[str, int] = {}
    colours: dict[Any, str] = {}
    rows: Iterable[tuple[Any, str, str, str]] = sorted(set(zip(df[key], df["build"], df["device"], _families(df))))
    for k, build, device, family in rows:
        if k in colours:
            continue
        shared, palette = palettes(colour_family(device, family), build)
        n = taken.get(shared, 0)
        taken[shared] = n + 1
        colours[k] = palette[LEGEND_SHADES[n % len(LEGEND_SHADES)]]
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
