"""Prices: what an instance costs per hour and where the figure comes from; what a run costs.

* ``model``: a catalog row (``Price``), the rate used (``Quote``), what a run ran on (``Resources``: a
  VM and its accelerators), ``usd`` (time to money), the one number parser;
* ``shipped``: the rows shipped with cpustudy and a user's ``--prices FILE``;
* ``sky``: SkyPilot's price catalogs per cloud, where SkyPilot has downloaded them;
* ``platforms``: which cloud instance families run the CPU a run measured;
* ``own``: a local run priced as its own CPU: the cheapest priced family that runs it;
* ``catalog``: the façade: ``Catalog.load`` (shipped < SkyPilot < price file), the lookups, and
  ``Catalog.cost(resources, seconds)``, which both ``cloud plan`` and the report price a run with.

Standard library only (the CLI checks a price file without pandas). Nothing here imports the analysis,
the report or the cloud package.
"""

from cpustudy.prices.catalog import (Catalog, Cost, basis_sentence, detect_accelerator, quote,
                                     unpriced_note)
from cpustudy.prices.model import COLUMNS, DEFAULT_FAMILY, DEFAULT_REGIONS, Price, Quote, Resources, family_of, \
    memory_need_gib, parse_family, usd
from cpustudy.prices.own import machine_of, own_family
from cpustudy.prices.shipped import read_csv, shipped_rows

__all__ = ["COLUMNS", "Catalog", "Cost", "DEFAULT_FAMILY", "read_csv", "shipped_rows", "DEFAULT_REGIONS", "Price", "Quote", "Resources", "basis_sentence",
           "detect_accelerator", "family_of", "machine_of", "memory_need_gib", "own_family", "parse_family", "quote", "unpriced_note", "usd"]
