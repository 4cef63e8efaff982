# onsets-and-frames' training script (train.py): Adam with a StepLR schedule over the MAESTRO or MAPS
# loader; each iteration zeroes the gradient, calls backward, steps the optimizer and the scheduler, and only
# then clips the gradient norm when `clip_gradient_norm` is set: the step has already used the unclipped
# gradient, and the next zero_grad discards the clipped one.
# evidence: jongwook/onsets-and-frames#24 ("Gradient clipping in the wrong place?": "you have the gradient
# clipping after the `.backward()` and `.step()` operations. Shouldn't we put the `clip_grad_norm_` in
# between"; the author: "Yeah it definitely should."), at jongwook/onsets-and-frames@783ca08 (train.py)
import os
from datetime import datetime

import numpy as np
import torch
from torch.nn.utils import clip_grad_norm_
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader
from tqdm import tqdm

from onsets_and_frames import MAESTRO, OnsetsAndFrames, cycle, evaluate, summary
from onsets_and_frames.constants import MAX_MIDI, MIN_MIDI, N_MELS


def train(logdir, device, iterations, resume_iteration, checkpoint_interval, batch_size, sequence_length,
          model_complexity, learning_rate, learning_rate_decay_steps, learning_rate_decay_rate,
          clip_gradient_norm, validation_length, validation_interval):
    dataset = MAESTRO(groups=['train'], sequence_length=sequence_length)
    validation_dataset = MAESTRO(groups=['validation'], sequence_length=sequence_length)
    loader = DataLoader(dataset, batch_size, shuffle=True, drop_last=True)

    model = OnsetsAndFrames(N_MELS, MAX_MIDI - MIN_MIDI + 1, model_complexity).to(device)
    optimizer = torch.optim.Adam(model.parameters(), learning_rate)
    resume_iteration = 0

    summary(model)
    scheduler = StepLR(optimizer, step_size=learning_rate_decay_steps, gamma=learning_rate_decay_rate)

    loop = tqdm(range(resume_iteration + 1, iterations + 1))
    for i, batch in zip(loop, cycle(loader)):
        predictions, losses = model.run_on_batch(batch)

        loss = sum(losses.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()

        if clip_gradient_norm:
            clip_grad_norm_(model.parameters(), clip_gradient_norm)  # BUG TL792: clipped after optimizer.step(): the update used the unclipped gradient

        if i % validation_interval == 0:
            model.eval()
            with torch.no_grad():
                for key, value in evaluate(validation_dataset, model).items():
                    print('validation/' + key.replace(' ', '_'), np.mean(value))
            model.train()

        if i % checkpoint_interval == 0:
            torch.save(model, os.path.join(logdir, f'model-{i}.pt'))
            torch.save(optimizer.state_dict(), os.path.join(logdir, 'last-optimizer-state.pt'))


if __name__ == '__main__':
    train('runs/transcriber-' + datetime.now().strftime('%y%m%d-%H%M%S'), 'cuda' if torch.cuda.is_available() else 'cpu',
          500000, None, 1000, 8, 327680, 48, 0.0006, 10000, 0.98, 0, 320000, 500)
