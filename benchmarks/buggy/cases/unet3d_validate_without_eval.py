# A 3D U-Net trainer class: validate() runs the validation batches under torch.no_grad() but never
# switches the model to eval mode, so dropout / batch norm stay in training mode while validating
# (the training loop calls it every `validate_after_iters` iterations).
# evidence: wolny/pytorch-3dunet#53 ("Need to set the model to 'eval' mode when assessing the validation
# data": add self.model.eval() before the validation forward pass and self.model.train() after)
import torch

from unet3d.utils import RunningAverage


class UNet3DTrainer:
    def __init__(self, model, optimizer, loss_criterion, loaders, max_num_epochs=100, validate_after_iters=100):
        self.model = model
        self.optimizer = optimizer
        self.loss_criterion = loss_criterion
        self.loaders = loaders
        self.max_num_epochs = max_num_epochs
        self.validate_after_iters = validate_after_iters
        self.num_iterations = 1
        self.num_epoch = 0

    def fit(self):
        for _ in range(self.num_epoch, self.max_num_epochs):
            self.train(self.loaders["train"])
            self.num_epoch += 1

    def train(self, train_loader):
        train_losses = RunningAverage()
        self.model.train()
        for i, t in enumerate(train_loader):
            input, target = t
            output, loss = self._forward_pass(input, target)
            train_losses.update(loss.item(), input.size(0))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.num_iterations % self.validate_after_iters == 0:
                eval_loss = self.validate(self.loaders["val"])
                print(f"validation loss: {eval_loss}")
            self.num_iterations += 1

    def validate(self, val_loader):
        val_losses = RunningAverage()
        with torch.no_grad():
            for i, t in enumerate(val_loader):
                input, target = t
                output, loss = self._forward_pass(input, target)  # BUG TL702: validation without self.model.eval(): dropout/batch norm in training mode
                val_losses.update(loss.item(), input.size(0))
        return val_losses.avg

    def _forward_pass(self, input, target):
        output = self.model(input)
        loss = self.loss_criterion(output, target)
        return output, loss
