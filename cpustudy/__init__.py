"""cpustudy: which CPU configuration trains a deep-learning workload fastest and cheapest?

Importing this package is cheap: TensorFlow, Keras, pandas and plotnine are imported lazily by the
modules that need them (the worker, analysis and report), never by the CLI's parser.
"""

__version__ = "0.2.0"
