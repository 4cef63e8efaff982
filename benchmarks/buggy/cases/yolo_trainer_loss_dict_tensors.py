# A YOLO (v9-family) training package's ModelTrainer (yolo/tools/solver.py): `train_one_batch` runs the
# AMP step and returns the loss function's per-component losses; `train_one_epoch` sums them, per name, into
# a `defaultdict` of device tensors (`total_loss[loss_name] += loss_val * batch_size`), which keeps growing
# memory through the epoch.
# evidence: MultimediaTechLab/YOLO#83 ("[FIX] Fixes memory leak": around 1-2 MB leaked per batch; merged as
# MultimediaTechLab/YOLO@dea5a8ada1b6d55c8542a40d284f41707134d445: `defaultdict(float)` and
# `total_loss[loss_name] += loss_val.item() * batch_size`)
from collections import defaultdict

import torch
from torch import Tensor, distributed
from torch.cuda.amp import GradScaler, autocast
from torch.nn.parallel import DistributedDataParallel as DDP

from yolo.config.config import Config, TrainConfig
from yolo.model.yolo import YOLO
from yolo.tools.loss_functions import create_loss_function
from yolo.utils.bounding_box_utils import Vec2Box
from yolo.utils.model_utils import create_optimizer, create_scheduler


class ModelTrainer:
    def __init__(self, cfg: Config, model: YOLO, vec2box: Vec2Box, progress, device, use_ddp: bool):
        train_cfg: TrainConfig = cfg.task
        self.model = model if not use_ddp else DDP(model, device_ids=[device])
        self.use_ddp = use_ddp
        self.vec2box = vec2box
        self.device = device
        self.optimizer = create_optimizer(model, train_cfg.optimizer)
        self.scheduler = create_scheduler(self.optimizer, train_cfg.scheduler)
        self.loss_fn = create_loss_function(cfg, vec2box)
        self.progress = progress
        self.num_epochs = cfg.task.epoch
        self.scaler = GradScaler()

    def train_one_batch(self, images: Tensor, targets: Tensor):
        images, targets = images.to(self.device), targets.to(self.device)
        self.optimizer.zero_grad()

        with autocast():
            predicts = self.model(images)
            aux_predicts = self.vec2box(predicts["AUX"])
            main_predicts = self.vec2box(predicts["Main"])
            loss, loss_item = self.loss_fn(aux_predicts, main_predicts, targets)

        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=10.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()

        return loss_item

    def train_one_epoch(self, dataloader):
        self.model.train()
        total_loss = defaultdict(lambda: torch.tensor(0.0, device=self.device))
        total_samples = 0
        self.optimizer.next_epoch(len(dataloader))
        for batch_size, images, targets, *_ in dataloader:
            self.optimizer.next_batch()
            loss_each = self.train_one_batch(images, targets)

            for loss_name, loss_val in loss_each.items():
                if self.use_ddp:
                    distributed.all_reduce(loss_val, op=distributed.ReduceOp.AVG)
                total_loss[loss_name] += loss_val * batch_size  # BUG TL703: per-batch loss tensors summed into device tensors: memory grows every batch
            total_samples += batch_size
            self.progress.one_batch(loss_each)

        for loss_val in total_loss.values():
            loss_val /= total_samples

        if self.scheduler:
            self.scheduler.step()

        return total_loss
