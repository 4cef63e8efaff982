# The course's chapter 7 section 5 (summarization with mT5 on Amazon reviews), PyTorch notebook: the
# seq2seq collator is tried on two tokenized examples that still hold the dataset's string columns.
# evidence: huggingface/notebooks#130 ("Remove str columns": ValueError: too many dimensions 'str' at
# data_collator(features) in course/chapter7/section5_pt.ipynb); huggingface/transformers#15505 (same
# cell: "Unable to create tensor, you should probably activate truncation and/or padding")
from datasets import concatenate_datasets, DatasetDict, load_dataset
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq

spanish_dataset = load_dataset("amazon_reviews_multi", "es")
english_dataset = load_dataset("amazon_reviews_multi", "en")


def filter_books(example):
    return example["product_category"] == "book" or example["product_category"] == "digital_ebook_purchase"


spanish_books = spanish_dataset.filter(filter_books)
english_books = english_dataset.filter(filter_books)
books_dataset = DatasetDict()
for split in english_books.keys():
    books_dataset[split] = concatenate_datasets([english_books[split], spanish_books[split]])
    books_dataset[split] = books_dataset[split].shuffle(seed=42)
books_dataset = books_dataset.filter(lambda x: len(x["review_title"].split()) > 2)

model_checkpoint = "google/mt5-small"
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)
max_input_length = 512
max_target_length = 30


def preprocess_function(examples):
    model_inputs = tokenizer(examples["review_body"], max_length=max_input_length, truncation=True)
    labels = tokenizer(examples["review_title"], max_length=max_target_length, truncation=True)
    model_inputs["labels"] = labels["input_ids"]
    return model_inputs


tokenized_datasets = books_dataset.map(preprocess_function, batched=True)
model = AutoModelForSeq2SeqLM.from_pretrained(model_checkpoint)
data_collator = DataCollatorForSeq2Seq(tokenizer, model=model)
features = [tokenized_datasets["train"][i] for i in range(2)]
data_collator(features)  # BUG TL202: the features still hold the string columns (review_body, product_category, ...): the collator cannot make tensors of them
