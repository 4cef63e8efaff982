"""TL103 through `.take(N)`, `.select(range(N))` on an aliased `load_dataset`, and a `split=` held by a
name; TL102 through a `.filter` function."""
from datasets import load_dataset as get

SPLIT = "train[:2000]"
head = get("imdb", split=SPLIT)
ordered = get("rotten_tomatoes")
subset = ordered["train"].select(range(500))
streamed = get("dbpedia_14", split="train").take(1000)
short = get("imdb")["train"].filter(lambda ex: len(ex["review"]) < 500)
