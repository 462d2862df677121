"""One module per command: ``register(sub)`` adds its parser, ``run(args)`` parses what is left,
calls one library function and prints. Heavy modules are imported inside ``run``."""

from cpustudy.cli.commands import (
    backtest,
    bench,
    builds,
    cloud,
    compare,
    import_logs,
    machine,
    merge,
    prices,
    recommend,
    report,
    results,
    run,
    sweep,
    tune,
    workloads,
)

#: In the order ``cpustudy --help`` lists them.
COMMANDS = (workloads, machine, run, sweep, tune, bench, builds, results, report, prices, recommend,
            compare, backtest, import_logs, merge, cloud)
