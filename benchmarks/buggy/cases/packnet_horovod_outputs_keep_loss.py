# A self-supervised depth-estimation package's Horovod trainer (packnet_sfm/trainers/horovod_trainer.py):
# `train()` calls `module.training_step(batch, i)`, backpropagates `output['loss']`, steps, and appends the
# whole output dict to `outputs` for `training_epoch_end`; the dict still holds the loss tensor with its
# autograd graph, so every batch's graph stays alive until the end of the epoch.
# evidence: TRI-ML/packnet-sfm#51 ("Fix memory leak": "Detach loss before appending it to the training
# output list"; merged as TRI-ML/packnet-sfm@2698f1fb27785275ef847f3dbbd550cf8fff1799, which adds
# `output['loss'] = output['loss'].detach()` before the append)
import os
import torch
import horovod.torch as hvd
from packnet_sfm.trainers.base_trainer import BaseTrainer, sample_to_cuda
from packnet_sfm.utils.config import prep_logger_and_checkpoint
from packnet_sfm.utils.logging import print_config
from packnet_sfm.utils.logging import AvgMeter


class HorovodTrainer(BaseTrainer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        hvd.init()
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", 1)))
        torch.cuda.set_device(hvd.local_rank())
        torch.backends.cudnn.benchmark = True
        self.avg_loss = AvgMeter(50)

    def fit(self, module):
        module.trainer = self
        prep_logger_and_checkpoint(module)
        print_config(module.config)
        module = module.to("cuda")
        module.configure_optimizers()
        compression = hvd.Compression.none
        optimizer = hvd.DistributedOptimizer(module.optimizer, named_parameters=module.named_parameters(),
                                             compression=compression)
        scheduler = module.scheduler
        train_dataloader = module.train_dataloader()
        val_dataloaders = module.val_dataloader()
        for epoch in range(module.current_epoch, self.max_epochs):
            self.train(train_dataloader, module, optimizer)
            validation_output = self.validate(val_dataloaders, module)
            self.check_and_save(module, validation_output)
            module.current_epoch += 1
            scheduler.step()

    def train(self, dataloader, module, optimizer):
        module.train()
        if hasattr(dataloader.sampler, "set_epoch"):
            dataloader.sampler.set_epoch(module.current_epoch)
        progress_bar = self.train_progress_bar(dataloader, module.config.datasets.train)
        outputs = []
        for i, batch in progress_bar:
            optimizer.zero_grad()
            batch = sample_to_cuda(batch)
            output = module.training_step(batch, i)
            output["loss"].backward()
            optimizer.step()
            outputs.append(output)  # BUG TL703: the output dict keeps the loss tensor and its graph: memory grows through the epoch
            if self.is_rank_0:
                progress_bar.set_description("Epoch {} | Avg.Loss {:.4f}".format(
                    module.current_epoch, self.avg_loss(output["loss"].item())))
        return module.training_epoch_end(outputs)

    def validate(self, dataloaders, module):
        module.eval()
        all_outputs = []
        for n, dataloader in enumerate(dataloaders):
            progress_bar = self.val_progress_bar(dataloader, module.config.datasets.validation, n)
            outputs = []
            for i, batch in progress_bar:
                batch = sample_to_cuda(batch)
                output = module.validation_step(batch, i, n)
                outputs.append(output)
            all_outputs.append(outputs)
        return module.validation_epoch_end(all_outputs)
