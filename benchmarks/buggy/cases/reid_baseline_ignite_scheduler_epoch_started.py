# A person re-identification baseline trained with pytorch-ignite (engine/trainer.py): the warm-up
# multi-step scheduler is stepped in an EPOCH_STARTED handler, so each epoch's scheduler step runs before
# that epoch's optimizer steps (the first value of the warm-up schedule is skipped; PyTorch warns
# "Detected call of lr_scheduler.step() before optimizer.step()").
# evidence: michuanhaohao/reid-strong-baseline#190 (the reporter proposes moving the handler to
# Events.EPOCH_COMPLETED; the maintainer: "You are right. New versions of Pytorch result in such warning.
# But it does not influence the performance a lot.")
import logging

import torch
import torch.nn as nn
from ignite.engine import Engine, Events
from ignite.metrics import RunningAverage


def create_supervised_trainer(model, optimizer, loss_fn, device=None):
    if device:
        if torch.cuda.device_count() > 1:
            model = nn.DataParallel(model)
        model.to(device)

    def _update(engine, batch):
        model.train()
        optimizer.zero_grad()
        img, target = batch
        img = img.to(device) if torch.cuda.device_count() >= 1 else img
        target = target.to(device) if torch.cuda.device_count() >= 1 else target
        score, feat = model(img)
        loss = loss_fn(score, feat, target)
        loss.backward()
        optimizer.step()
        acc = (score.max(1)[1] == target).float().mean()
        return loss.item(), acc.item()

    return Engine(_update)


def do_train(cfg, model, train_loader, val_loader, optimizer, scheduler, loss_fn, num_query, start_epoch):
    log_period = cfg.SOLVER.LOG_PERIOD
    device = cfg.MODEL.DEVICE
    epochs = cfg.SOLVER.MAX_EPOCHS
    logger = logging.getLogger("reid_baseline.train")
    trainer = create_supervised_trainer(model, optimizer, loss_fn, device=device)
    RunningAverage(output_transform=lambda x: x[0]).attach(trainer, "avg_loss")
    RunningAverage(output_transform=lambda x: x[1]).attach(trainer, "avg_acc")

    @trainer.on(Events.STARTED)
    def start_training(engine):
        engine.state.epoch = start_epoch

    @trainer.on(Events.EPOCH_STARTED)
    def adjust_learning_rate(engine):
        scheduler.step()  # BUG TL704: stepped when the epoch starts, before the epoch's optimizer steps

    @trainer.on(Events.ITERATION_COMPLETED)
    def log_training_loss(engine):
        if engine.state.iteration % log_period == 0:
            logger.info(
                "Epoch[{}] Loss: {:.3f}, Acc: {:.3f}, Base Lr: {:.2e}".format(
                    engine.state.epoch,
                    engine.state.metrics["avg_loss"],
                    engine.state.metrics["avg_acc"],
                    scheduler.get_lr()[0],
                )
            )

    trainer.run(train_loader, max_epochs=epochs)
