"""A metric used as a dataset: `evaluate.load` imported under another name, and `datasets.load_metric`
through a module alias, used by a method and by a string subscript."""
import datasets as d
from evaluate import load as fetch

raw = fetch("glue", "mrpc")
tokenized = raw.map(lambda e: e)

other = d.load_metric("glue", "sst2")
train = other["train"]
