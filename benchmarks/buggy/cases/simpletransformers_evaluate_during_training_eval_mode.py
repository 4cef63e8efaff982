# simpletransformers' ClassificationModel (simpletransformers/classification/classification_model.py), a
# wrapper around transformers' sequence classifiers with its own PyTorch training loop: model.train() is
# called once before the epoch loop, and with evaluate_during_training the loop calls eval_model() every
# `evaluate_during_training_steps` steps, whose evaluate() puts the model in eval mode; nothing puts it
# back, so the rest of training runs with dropout off.
# evidence: ThilinaRajapakse/simpletransformers#739 ("Pytorch model.train() should be called every step
# instead of only once": with evaluate_during_training, model.eval() is called and "the model will not be
# put back into train mode"; the maintainer: "I just made a quick fix for this", commit 6370a1b)
import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler
from tqdm.auto import tqdm, trange
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup


class ClassificationModel:
    def __init__(self, model_name, num_labels, args):
        self.args = args
        self.model = AutoModelForSequenceClassification.from_pretrained(model_name, num_labels=num_labels)
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def train_model(self, train_dataset, eval_dataset):
        self.model.to(self.device)
        train_dataloader = DataLoader(
            train_dataset, sampler=RandomSampler(train_dataset), batch_size=self.args.train_batch_size
        )
        return self.train(train_dataloader, eval_dataset)

    def train(self, train_dataloader, eval_dataset):
        model = self.model
        args = self.args
        t_total = len(train_dataloader) // args.gradient_accumulation_steps * args.num_train_epochs
        no_decay = ["bias", "LayerNorm.weight"]
        optimizer_grouped_parameters = [
            {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
             "weight_decay": args.weight_decay},
            {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
             "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=args.learning_rate, eps=args.adam_epsilon)
        scheduler = get_linear_schedule_with_warmup(
            optimizer, num_warmup_steps=args.warmup_steps, num_training_steps=t_total
        )
        global_step = 0
        tr_loss = 0.0
        model.zero_grad()
        train_iterator = trange(int(args.num_train_epochs), desc="Epoch")
        model.train()
        for _ in train_iterator:
            for step, batch in enumerate(tqdm(train_dataloader, desc="Running Epoch")):
                inputs = self._get_inputs_dict(batch)
                outputs = model(**inputs)
                loss = outputs[0]
                if args.gradient_accumulation_steps > 1:
                    loss = loss / args.gradient_accumulation_steps
                loss.backward()
                tr_loss += loss.item()
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                    optimizer.step()
                    scheduler.step()
                    model.zero_grad()
                    global_step += 1
                    if args.evaluate_during_training and (
                        args.evaluate_during_training_steps > 0
                        and global_step % args.evaluate_during_training_steps == 0
                    ):
                        results, _ = self.eval_model(eval_dataset)  # BUG TL702: evaluate() leaves the model in eval mode and model.train() was called only once, before the epoch loop
                        print(global_step, results)
        return global_step, tr_loss / global_step

    def eval_model(self, eval_dataset):
        result, model_outputs = self.evaluate(eval_dataset)
        return result, model_outputs

    def evaluate(self, eval_dataset):
        model = self.model
        eval_dataloader = DataLoader(
            eval_dataset, sampler=SequentialSampler(eval_dataset), batch_size=self.args.eval_batch_size
        )
        eval_loss = 0.0
        nb_eval_steps = 0
        preds = []
        model.eval()
        for batch in tqdm(eval_dataloader, desc="Running Evaluation"):
            with torch.no_grad():
                inputs = self._get_inputs_dict(batch)
                outputs = model(**inputs)
                tmp_eval_loss, logits = outputs[:2]
                eval_loss += tmp_eval_loss.mean().item()
            nb_eval_steps += 1
            preds.append(logits.detach().cpu())
        eval_loss = eval_loss / nb_eval_steps
        return {"eval_loss": eval_loss}, torch.cat(preds)

    def _get_inputs_dict(self, batch):
        batch = tuple(t.to(self.device) for t in batch)
        return {"input_ids": batch[0], "attention_mask": batch[1], "labels": batch[3]}
