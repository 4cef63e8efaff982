# RAE's stage-2 diffusion training script (src/train.py): DDP training with `grad_accum_steps` from the
# config; the loss is divided by grad_accum_steps and the optimizer steps every grad_accum_steps iterations,
# but `optimizer.zero_grad(set_to_none=True)` runs at the top of every micro-batch, so only the last
# micro-batch's gradient is ever applied.
# evidence: bytetriper/RAE#67 ("train.py: zero_grad is called per microbatch, breaking gradient
# accumulation"; the maintainer: "Thanks for the careful inspection!", asking for the fix, proposed in
# bytetriper/RAE#78)
from collections import defaultdict

import torch
import torch.distributed as dist
from torch.cuda.amp import autocast


def train(config, rae, model, ddp_model, transport, loader, sampler, optimizer, scheduler, scaler, device,
          start_epoch, num_epochs, clip_grad=None, autocast_kwargs=None):
    training_cfg = config.training
    grad_accum_steps = int(training_cfg.get("grad_accum_steps", 1))
    if grad_accum_steps < 1:
        raise ValueError("Gradient accumulation steps must be >= 1.")
    global_step = 0
    running_loss = 0.0
    dist.barrier()
    for epoch in range(start_epoch, num_epochs):
        model.train()
        sampler.set_epoch(epoch)
        epoch_metrics = defaultdict(lambda: torch.zeros(1, device=device))
        optimizer.zero_grad()
        for step, (images, labels) in enumerate(loader):
            images = images.to(device)
            labels = labels.to(device)
            with torch.no_grad():
                z = rae.encode(images)
            optimizer.zero_grad(set_to_none=True)  # BUG TL708: zero_grad inside the accumulation window: the earlier micro-batches' gradients are discarded
            model_kwargs = dict(y=labels)
            with autocast(**autocast_kwargs):
                loss = transport.training_losses(ddp_model, z, model_kwargs)["loss"].mean()
            if scaler:
                scaler.scale(loss / grad_accum_steps).backward()
            else:
                (loss / grad_accum_steps).backward()
            if clip_grad:
                if scaler:
                    scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(ddp_model.parameters(), clip_grad)
            if global_step % grad_accum_steps == 0:
                if scaler:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
                if scheduler is not None:
                    scheduler.step()
            running_loss += loss.item()
            epoch_metrics['loss'] += loss.detach()
            global_step += 1
