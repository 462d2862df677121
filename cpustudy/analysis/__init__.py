"""From stored runs to the numbers a report, ``compare`` and ``recommend`` state. The modules, in data-flow order:

* ``studies``: which studies there are and how each is treated, one ``Study`` record each (standard
  library);
* ``frames``: typed access to a DataFrame's rows (for mypy with pandas-stubs);
* ``stats``: every comparison and interval cpustudy states (Welch's t on log times, equivalence,
  prediction intervals), with its error rate and level (NumPy and SciPy);
* ``runs``: stored runs -> one pandas row per comparable run, with the configuration's fields (recipe,
  setting tags, platform, stock), its name and workload variant, its full-training time (which runs are
  the same is ``cpustudy.identity``'s, below this package: each summary row is a union of its groups);
* ``costs``: the instance and rate of each configuration (from ``cpustudy.prices``), and what its
  training costs;
* ``suspect``: when a GPU result cannot be right (standard library);
* ``peakshare``: a run's share of its device's peak, only where that means something (standard library);
* ``holdup``: whether a comparison holds up, or the ``Reason`` it is inconclusive;
* ``projection``: projections from capped epochs checked against full epochs, idle stalls kept out;
* ``baselines``: the 1.0x of each study and workload, and everything relative to it;
* ``model``: the one model of a comparison's measurements, every figure of an answer drawn from it;
* ``compare``: time and cost to a target accuracy per candidate machine, from the seeds' convergence and
  the speed runs, with how sure the answer is;
* ``totarget``: the same from what a database holds (candidates, speed runs, prices, seeds), for
  ``cpustudy compare``, ``recommend --target-accuracy`` and the report alike;
* ``summary``: ``analyze()``: runs -> one row per configuration, priced, relative to its baseline,
  with its scaling;
* ``recommend``: the cheapest configuration within a deadline, the fastest within a budget.

Prices live in ``cpustudy.prices``, below this package (it never imports it). Nothing is imported here,
so that ``suspect`` and ``peakshare`` stay free of pandas (``cpustudy results`` reads them): import the module you
need (``from cpustudy.analysis import summary``).
"""
