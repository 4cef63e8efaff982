# Texar-PyTorch's BERT classifier example (examples/bert/bert_classifier_main.py): main() defines nested
# _train_epoch() and _eval_epoch() closures over `model`; _train_epoch() calls model.train() once, then every
# eval_steps steps calls _eval_epoch(), which runs model.eval(), and the remaining steps of the epoch train in
# eval mode (no dropout).
# evidence: asyml/texar-pytorch#310 ("Switch between model.train() and model.eval()": after
# _eval_epoch() the mode is not switched back; labelled bug), fixed by asyml/texar-pytorch#311 (commit
# 0ba18bff28cd8fff2640021354c15dfd4aef2f72 adds model.train() after _eval_epoch())
import argparse
import functools
import importlib
import logging
from typing import Any

import texar.torch as tx
import torch
import torch.nn.functional as F

from utils import model_utils

parser = argparse.ArgumentParser()
parser.add_argument("--config-downstream", default="config_classifier")
parser.add_argument("--pretrained-model-name", type=str, default="bert-base-uncased")
parser.add_argument("--config-data", default="config_data")
parser.add_argument("--do-train", action="store_true")
parser.add_argument("--do-eval", action="store_true")
args = parser.parse_args()

config_data: Any = importlib.import_module(args.config_data)
config_downstream = importlib.import_module(args.config_downstream)
config_downstream = {k: v for k, v in config_downstream.__dict__.items()
                     if not k.startswith('__') and k != "hyperparams"}

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main() -> None:
    num_train_data = config_data.num_train_data
    model = tx.modules.BERTClassifier(pretrained_model_name=args.pretrained_model_name, hparams=config_downstream)
    model.to(device)

    num_train_steps = int(num_train_data / config_data.train_batch_size * config_data.max_train_epoch)
    num_warmup_steps = int(num_train_steps * config_data.warmup_proportion)

    vars_with_decay = []
    vars_without_decay = []
    for name, param in model.named_parameters():
        if 'layer_norm' in name or name.endswith('bias'):
            vars_without_decay.append(param)
        else:
            vars_with_decay.append(param)
    opt_params = [{'params': vars_with_decay, 'weight_decay': 0.01},
                  {'params': vars_without_decay, 'weight_decay': 0.0}]
    optim = tx.core.BertAdam(opt_params, betas=(0.9, 0.999), eps=1e-6, lr=2e-5)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optim, functools.partial(model_utils.get_lr_multiplier, total_steps=num_train_steps,
                                 warmup_steps=num_warmup_steps))

    train_dataset = tx.data.RecordData(hparams=config_data.train_hparam, device=device)
    eval_dataset = tx.data.RecordData(hparams=config_data.eval_hparam, device=device)
    iterator = tx.data.DataIterator({"train": train_dataset, "eval": eval_dataset})

    def _compute_loss(logits, labels):
        if model.is_binary:
            return F.binary_cross_entropy(logits.view(-1), labels.view(-1), reduction='mean')
        return F.cross_entropy(logits.view(-1, model.num_classes), labels.view(-1), reduction='mean')

    def _train_epoch():
        iterator.switch_to_dataset("train")
        model.train()

        for batch in iterator:
            optim.zero_grad()
            input_ids = batch["input_ids"]
            segment_ids = batch["segment_ids"]
            labels = batch["label_ids"]
            input_length = (1 - (input_ids == 0).int()).sum(dim=1)
            logits, _ = model(input_ids, input_length, segment_ids)
            loss = _compute_loss(logits, labels)
            loss.backward()
            optim.step()
            scheduler.step()
            step = scheduler.last_epoch

            dis_steps = config_data.display_steps
            if dis_steps > 0 and step % dis_steps == 0:
                logging.info("step: %d; loss: %f", step, loss)

            eval_steps = config_data.eval_steps
            if eval_steps > 0 and step % eval_steps == 0:
                _eval_epoch()  # BUG TL702: _eval_epoch() leaves the model in eval mode; the rest of the epoch trains without dropout

    @torch.no_grad()
    def _eval_epoch():
        iterator.switch_to_dataset("eval")
        model.eval()

        nsamples = 0
        avg_rec = tx.utils.AverageRecorder()
        for batch in iterator:
            input_ids = batch["input_ids"]
            segment_ids = batch["segment_ids"]
            labels = batch["label_ids"]
            input_length = (1 - (input_ids == 0).int()).sum(dim=1)
            logits, preds = model(input_ids, input_length, segment_ids)
            loss = _compute_loss(logits, labels)
            accu = tx.evals.accuracy(labels, preds)
            batch_size = input_ids.size()[0]
            avg_rec.add([accu, loss], batch_size)
            nsamples += batch_size
        logging.info("eval accu: %.4f; loss: %.4f; nsamples: %d", avg_rec.avg(0), avg_rec.avg(1), nsamples)

    if args.do_train:
        for _ in range(config_data.max_train_epoch):
            _train_epoch()
    if args.do_eval:
        _eval_epoch()


if __name__ == "__main__":
    main()
