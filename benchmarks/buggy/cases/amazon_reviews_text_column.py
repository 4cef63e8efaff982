# Tokenizing amazon_reviews_multi the way the datasets documentation's map() example does, with a
# `text` column that this dataset does not have (its text is in `review_body`).
# evidence: huggingface/datasets#6287 ("map() not recognizing 'text'": KeyError: 'text'; the maintainer:
# there is no "text" column in amazon_reviews_multi)
from datasets import load_dataset
from transformers import AutoTokenizer

dataset = load_dataset("amazon_reviews_multi")
tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
tokenizedDataset = dataset.map(lambda x: tokenizer(x["text"]), batched=True)  # BUG TL102: amazon_reviews_multi has no "text" column
