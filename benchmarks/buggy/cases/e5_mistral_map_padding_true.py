# LoRA fine-tuning of an embedding model for semantic search (in the shape of peft's example
# peft_lora_embedding_semantic_search.py), where the map() preprocessing pads with padding=True:
# each map batch of 1000 rows is padded to its own longest row, and the default collator then fails
# on training batches drawn across map batches.
# evidence: kamalkraj/e5-mistral-7b-instruct#11 ("ValueError: expected sequence of length 595 at dim 1
# (got 589)": preprocess_function pads per dataset batch, not over the whole dataset)
import torch
from datasets import load_dataset
from peft import LoraConfig, TaskType, get_peft_model
from torch.utils.data import DataLoader
from transformers import AutoModel, AutoTokenizer, default_data_collator

model_name = "intfloat/e5-mistral-7b-instruct"
tokenizer = AutoTokenizer.from_pretrained(model_name)
dataset = load_dataset("json", data_files={"train": "train.jsonl"})


def preprocess_function(examples):
    queries = examples["query"]
    result = tokenizer(queries, padding=True, max_length=512, truncation=True)
    result = {f"query_{k}": v for k, v in result.items()}
    passages = examples["passage"]
    result_passages = tokenizer(passages, padding=True, max_length=512, truncation=True)
    for k, v in result_passages.items():
        result[f"passage_{k}"] = v
    result["labels"] = examples["label"]
    return result


processed_datasets = dataset.map(preprocess_function, batched=True, remove_columns=dataset["train"].column_names)
train_dataset = processed_datasets["train"]
train_dataloader = DataLoader(train_dataset, shuffle=True, collate_fn=default_data_collator, batch_size=8, pin_memory=True)  # BUG TL201: map(padding=True) pads each map batch to its own length; the default collator cannot stack rows of different lengths

model = AutoModel.from_pretrained(model_name, torch_dtype=torch.bfloat16)
model = get_peft_model(model, LoraConfig(task_type=TaskType.FEATURE_EXTRACTION, r=8, lora_alpha=32, lora_dropout=0.1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for epoch in range(1):
    model.train()
    for step, batch in enumerate(train_dataloader):
        query_embs = model(input_ids=batch["query_input_ids"], attention_mask=batch["query_attention_mask"]).last_hidden_state[:, -1]
        passage_embs = model(input_ids=batch["passage_input_ids"], attention_mask=batch["passage_attention_mask"]).last_hidden_state[:, -1]
        scores = query_embs @ passage_embs.T
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(scores.size(0)))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
