"""From stored runs to the numbers a report or ``cpustudy results`` shows. The modules, in data-flow order:

* ``studies``: which studies there are and how each is treated (standard library);
* ``runs``: stored runs -> one pandas row per comparable run, its reported build and workload names,
  its full-training time; the labels of configurations;
* ``pricing``: the price catalog and a user's price file, and the rate of one instance on one basis
  (standard library: the CLI checks a price file without pandas);
* ``skycatalog``: SkyPilot's price catalog, where SkyPilot has downloaded it, as price rows that
  ``pricing`` puts between the shipped rows and a user's price file (standard library);
* ``costs``: the instance and rate of each configuration, and what its training costs;
* ``suspect``: when a GPU result cannot be right (standard library);
* ``baselines``: the 1.0x of each study and workload, and everything relative to it;
* ``summary``: ``analyze()``: runs -> one row per configuration, priced, relative to its baseline,
  with its scaling; and the questions asked of it (Pareto front, cheapest, then and now);
* ``results``: what ``cpustudy results`` shows: each stored run or epoch as a row, as CSV, JSON or a
  table (standard library and rich).

Nothing is imported here, so that ``pricing``, ``skycatalog``, ``suspect`` and ``results`` stay free of
pandas: import the module you need (``from cpustudy.analysis import summary``).
"""
