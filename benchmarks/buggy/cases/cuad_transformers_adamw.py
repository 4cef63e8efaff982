# A contract-QA (CUAD) training script in the shape of transformers' old examples run_squad.py:
# a hand-written loop with transformers' AdamW, removed in transformers 4.50.
# evidence: TheAtticusProject/cuad#22 (ImportError: cannot import name 'AdamW' from 'transformers';
# fix: import it from torch)
import torch
from torch.utils.data import DataLoader, RandomSampler
from transformers import (
    AdamW,  # BUG TL802: transformers.AdamW was removed
    AutoModelForQuestionAnswering,
    AutoTokenizer,
    get_linear_schedule_with_warmup,
    squad_convert_examples_to_features,
)
from transformers.data.processors.squad import SquadV2Processor


def train(args, train_dataset, model):
    train_dataloader = DataLoader(train_dataset, sampler=RandomSampler(train_dataset), batch_size=args.train_batch_size)
    t_total = len(train_dataloader) * args.num_train_epochs
    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = AdamW(optimizer_grouped_parameters, lr=args.learning_rate, eps=args.adam_epsilon)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=args.warmup_steps, num_training_steps=t_total)
    model.zero_grad()
    for _ in range(int(args.num_train_epochs)):
        for batch in train_dataloader:
            model.train()
            batch = tuple(t.to(args.device) for t in batch)
            inputs = {
                "input_ids": batch[0],
                "attention_mask": batch[1],
                "token_type_ids": batch[2],
                "start_positions": batch[3],
                "end_positions": batch[4],
            }
            outputs = model(**inputs)
            loss = outputs[0]
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            model.zero_grad()


def main(args):
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForQuestionAnswering.from_pretrained(args.model_name_or_path).to(args.device)
    examples = SquadV2Processor().get_train_examples(args.data_dir, filename=args.train_file)
    _, train_dataset = squad_convert_examples_to_features(
        examples=examples, tokenizer=tokenizer, max_seq_length=512, doc_stride=256,
        max_query_length=64, is_training=True, return_dataset="pt",
    )
    train(args, train_dataset, model)
