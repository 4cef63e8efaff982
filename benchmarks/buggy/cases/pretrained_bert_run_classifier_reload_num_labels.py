# /// script
# dependencies = ["pytorch-pretrained-bert<0.5", "torch"]
# ///
# (the environment of the time: pytorch-pretrained-BERT, whose BertForSequenceClassification takes
# num_labels=2 by default)
# pytorch-pretrained-BERT's examples/run_classifier.py (GLUE fine-tuning): the model is trained with
# num_labels from the task (MNLI: 3), saved, and reloaded for evaluation with from_pretrained(...,
# state_dict=...) without num_labels, so the evaluated model has a 2-way head and evaluation on a
# 3-class task fails with "Assertion `t >= 0 && t < n_classes` failed".
# evidence: huggingface/transformers#141 ("loading saved model when n_classes != 2": "Required to for:
# Assertion `t >= 0 && t < n_classes` failed, if your default number of classes is not 2"; merged by the
# maintainer, who also closed the duplicate #142: "#141 already addressed this problem")
import argparse
import os

import torch
from pytorch_pretrained_bert.modeling import BertForSequenceClassification
from pytorch_pretrained_bert.optimization import BertAdam
from pytorch_pretrained_bert.tokenization import BertTokenizer
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

from glue_processors import ColaProcessor, MnliProcessor, MrpcProcessor, convert_examples_to_features


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--bert_model", required=True)
    parser.add_argument("--task_name", required=True)
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--max_seq_length", default=128, type=int)
    parser.add_argument("--do_train", action="store_true")
    parser.add_argument("--do_eval", action="store_true")
    parser.add_argument("--train_batch_size", default=32, type=int)
    parser.add_argument("--eval_batch_size", default=8, type=int)
    parser.add_argument("--learning_rate", default=5e-5, type=float)
    parser.add_argument("--num_train_epochs", default=3.0, type=float)
    parser.add_argument("--warmup_proportion", default=0.1, type=float)
    args = parser.parse_args()

    processors = {"cola": ColaProcessor, "mnli": MnliProcessor, "mrpc": MrpcProcessor}
    num_labels_task = {"cola": 2, "mnli": 3, "mrpc": 2}
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    task_name = args.task_name.lower()
    processor = processors[task_name]()
    num_labels = num_labels_task[task_name]
    label_list = processor.get_labels()
    tokenizer = BertTokenizer.from_pretrained(args.bert_model, do_lower_case=True)

    train_examples = processor.get_train_examples(args.data_dir)
    num_train_steps = int(len(train_examples) / args.train_batch_size * args.num_train_epochs)

    # Prepare model
    model = BertForSequenceClassification.from_pretrained(args.bert_model, num_labels=num_labels)
    model.to(device)
    param_optimizer = list(model.named_parameters())
    no_decay = ["bias", "gamma", "beta"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in param_optimizer if not any(nd in n for nd in no_decay)], "weight_decay_rate": 0.01},
        {"params": [p for n, p in param_optimizer if any(nd in n for nd in no_decay)], "weight_decay_rate": 0.0},
    ]
    optimizer = BertAdam(optimizer_grouped_parameters, lr=args.learning_rate, warmup=args.warmup_proportion,
                         t_total=num_train_steps)

    if args.do_train:
        train_features = convert_examples_to_features(train_examples, label_list, args.max_seq_length, tokenizer)
        train_data = TensorDataset(
            torch.tensor([f.input_ids for f in train_features], dtype=torch.long),
            torch.tensor([f.input_mask for f in train_features], dtype=torch.long),
            torch.tensor([f.segment_ids for f in train_features], dtype=torch.long),
            torch.tensor([f.label_id for f in train_features], dtype=torch.long),
        )
        train_dataloader = DataLoader(train_data, sampler=RandomSampler(train_data), batch_size=args.train_batch_size)
        model.train()
        for _ in range(int(args.num_train_epochs)):
            for step, batch in enumerate(train_dataloader):
                input_ids, input_mask, segment_ids, label_ids = tuple(t.to(device) for t in batch)
                loss = model(input_ids, segment_ids, input_mask, label_ids)
                loss.backward()
                optimizer.step()
                model.zero_grad()

    # Save a trained model
    model_to_save = model.module if hasattr(model, "module") else model
    output_model_file = os.path.join(args.output_dir, "pytorch_model.bin")
    torch.save(model_to_save.state_dict(), output_model_file)

    # Load a trained model that you have fine-tuned
    model_state_dict = torch.load(output_model_file)
    model = BertForSequenceClassification.from_pretrained(args.bert_model, state_dict=model_state_dict)  # BUG TL301: reloaded without num_labels: a 2-way head for MNLI's 3 classes
    model.to(device)

    if args.do_eval:
        eval_examples = processor.get_dev_examples(args.data_dir)
        eval_features = convert_examples_to_features(eval_examples, label_list, args.max_seq_length, tokenizer)
        eval_data = TensorDataset(
            torch.tensor([f.input_ids for f in eval_features], dtype=torch.long),
            torch.tensor([f.input_mask for f in eval_features], dtype=torch.long),
            torch.tensor([f.segment_ids for f in eval_features], dtype=torch.long),
            torch.tensor([f.label_id for f in eval_features], dtype=torch.long),
        )
        eval_dataloader = DataLoader(eval_data, sampler=SequentialSampler(eval_data), batch_size=args.eval_batch_size)
        model.eval()
        eval_loss = 0
        for input_ids, input_mask, segment_ids, label_ids in eval_dataloader:
            input_ids, input_mask = input_ids.to(device), input_mask.to(device)
            segment_ids, label_ids = segment_ids.to(device), label_ids.to(device)
            with torch.no_grad():
                tmp_eval_loss = model(input_ids, segment_ids, input_mask, label_ids)
            eval_loss += tmp_eval_loss.mean().item()


if __name__ == "__main__":
    main()
