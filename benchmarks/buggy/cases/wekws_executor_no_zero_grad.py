# The keyword-spotting toolkit WeKws (kws/utils/executor.py): Executor.train runs backward, clips the
# gradient norm and steps the optimizer for every batch, but never clears the gradients, so every step
# applies the sum of all gradients since the start of training.
# evidence: wenet-e2e/wekws#73 ("[fix bug] add optimizer.zero_grad() in kws/utils/executor.py (#72)": "when
# optimizer.step() is called, optimizer.zero_grad() is not called"; merged as 141d407 after the
# maintainers' review: "I think you should add `optimizer.zero_grad()` above `loss.backward()`")
import logging

import torch
from torch.nn.utils import clip_grad_norm_

from kws.model.loss import criterion


class Executor:
    def __init__(self):
        self.step = 0

    def train(self, model, optimizer, data_loader, device, writer, args):
        """Train one epoch."""
        model.train()
        clip = args.get("grad_clip", 50.0)
        log_interval = args.get("log_interval", 10)
        epoch = args.get("epoch", 0)
        for batch_idx, batch in enumerate(data_loader):
            key, feats, target, feats_lengths = batch
            feats = feats.to(device)
            target = target.to(device)
            feats_lengths = feats_lengths.to(device)
            if feats_lengths.size(0) == 0:
                continue
            logits = model(feats)
            loss_type = args.get("criterion", "max_pooling")
            loss, acc = criterion(loss_type, logits, target, feats_lengths)
            loss.backward()
            grad_norm = clip_grad_norm_(model.parameters(), clip)
            if torch.isfinite(grad_norm):
                optimizer.step()  # BUG TL701: the gradients are never cleared in the loop (no optimizer.zero_grad())
            if batch_idx % log_interval == 0:
                logging.debug("TRAIN Batch {}/{} loss {:.8f} acc {:.8f}".format(epoch, batch_idx, loss.item(), acc))

    def cv(self, model, data_loader, device, args):
        model.eval()
        num_seen_utts = 1
        total_loss = 0.0
        total_acc = 0.0
        with torch.no_grad():
            for batch_idx, batch in enumerate(data_loader):
                key, feats, target, feats_lengths = batch
                feats = feats.to(device)
                target = target.to(device)
                feats_lengths = feats_lengths.to(device)
                num_utts = feats_lengths.size(0)
                if num_utts == 0:
                    continue
                logits = model(feats)
                loss, acc = criterion(args.get("criterion", "max_pooling"), logits, target, feats_lengths)
                if torch.isfinite(loss):
                    num_seen_utts += num_utts
                    total_loss += loss.item() * num_utts
                    total_acc += acc * num_utts
        return total_loss / num_seen_utts, total_acc / num_seen_utts
