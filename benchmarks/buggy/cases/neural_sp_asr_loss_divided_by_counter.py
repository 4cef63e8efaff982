# NeuralSP's ASR training script (neural_sp/bin/asr/train.py): gradient accumulation over
# `accum_grad_n_steps` micro-batches, but each micro-batch loss is divided by `accum_n_steps`, the running
# counter (1, 2, 3, ...), instead of the number of accumulated steps: the first micro-batch of each window
# weighs as much as all the others together and the accumulated gradient is not the mean.
# evidence: hirofumi0810/neural_sp#168 ("accum_grad loss error": "should divide loss by
# accum_grad_n_steps"; labelled bug, closed), fixed in hirofumi0810/neural_sp@e5c0c838 (loss /
# accum_grad_n_steps)
import time

import torch
from tqdm import tqdm

from neural_sp.bin.args_asr import parse_args_train
from neural_sp.datasets.asr import build_dataloader
from neural_sp.models.data_parallel import CustomDataParallel
from neural_sp.models.seq2seq.speech2text import Speech2Text
from neural_sp.trainers.lr_scheduler import LRScheduler
from neural_sp.trainers.optimizer import set_optimizer
from neural_sp.trainers.reporter import Reporter


def main():
    args = parse_args_train()
    if args.n_gpus >= 1:
        accum_grad_n_steps = max(1, args.accum_grad_n_steps // args.n_gpus)
    else:
        accum_grad_n_steps = args.accum_grad_n_steps

    train_set = build_dataloader(args=args, tsv_path=args.train_set, batch_size=args.batch_size, shuffle_bucket=True)
    model = CustomDataParallel(Speech2Text(args), device_ids=list(range(0, args.n_gpus)))
    optimizer = set_optimizer(model, args.optimizer, args.lr, args.weight_decay)
    scheduler = LRScheduler(optimizer, args.lr, decay_type=args.lr_decay_type, decay_start_epoch=args.lr_decay_start_epoch)
    reporter = Reporter(args, model)

    accum_n_steps = 0
    for ep in range(args.n_epochs):
        pbar_epoch = tqdm(total=len(train_set))
        for batch_train, is_new_epoch in train_set:
            accum_n_steps += 1
            if accum_n_steps == 1:
                loss_train = 0
            loss, observation = model(batch_train, task='all')
            loss = loss / accum_n_steps  # BUG TL708: divided by the running step counter, not by the number of accumulated steps: the accumulated gradient is mis-weighted
            reporter.add(observation)
            loss.backward()
            loss.detach()
            if accum_n_steps >= accum_grad_n_steps or is_new_epoch:
                if args.clip_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(model.module.parameters(), args.clip_grad_norm)
                scheduler.step()
                scheduler.zero_grad()
                accum_n_steps = 0
            loss_train += loss.item()
            del loss
            pbar_epoch.update(len(batch_train['utt_ids']))
            if is_new_epoch:
                break


if __name__ == '__main__':
    main()
