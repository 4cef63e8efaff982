# Silero VAD's fine-tuning utilities (tuning/utils.py): `train(config, loader, jit_model, decoder, criterion,
# optimizer, device)` runs a stateful decoder over 512-sample chunks of each batch inside
# `with torch.enable_grad():`, then `loss.backward(); optimizer.step()`, and never clears the gradients
# (the optimizer is Adam over the decoder's parameters, built in tuning/tune.py).
# evidence: snakers4/silero-vad#699 ("fix bug in tuning/utils.py: add optimizer.zero_grad() before
# loss.backward()": "optimizer.zero_grad() is missing, which could cause tuning error"; merged as
# snakers4/silero-vad@64fb49e)
import gc

import torch
import torch.nn as nn
from tqdm import tqdm


class AverageMeter(object):
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train(config, loader, jit_model, decoder, criterion, optimizer, device):
    losses = AverageMeter()
    decoder.train()

    context_size = 32 if config.tune_8k else 64
    num_samples = 256 if config.tune_8k else 512
    stft_layer = jit_model._model_8k.stft if config.tune_8k else jit_model._model.stft
    encoder_layer = jit_model._model_8k.encoder if config.tune_8k else jit_model._model.encoder

    with torch.enable_grad():
        for _, (x, targets, masks) in tqdm(enumerate(loader), total=len(loader)):
            targets = targets.to(device)
            x = x.to(device)
            masks = masks.to(device)
            x = torch.nn.functional.pad(x, (context_size, 0))

            outs = []
            state = torch.zeros(0)
            for i in range(context_size, x.shape[1], num_samples):
                input_ = x[:, i - context_size:i + num_samples]
                out = stft_layer(input_)
                out = encoder_layer(out)
                out, state = decoder(out, state)
                outs.append(out)
            stacked = torch.cat(outs, dim=2).squeeze(1)

            loss = criterion(stacked, targets)
            loss = (loss * masks).mean()
            loss.backward()
            optimizer.step()  # BUG TL701: the decoder's gradients are never cleared: every batch adds to all earlier ones
            losses.update(loss.item(), masks.numel())

    torch.cuda.empty_cache()
    gc.collect()

    return losses.avg
