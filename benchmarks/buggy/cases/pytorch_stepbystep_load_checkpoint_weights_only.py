# /// script
# dependencies = ["torch>=2.6", "numpy", "matplotlib", "tensorboard"]
# ///
# (the environment of the report: PyTorch 2.6, where torch.load defaults to weights_only=True)
# The "Deep Learning with PyTorch Step-by-Step" book's training class (stepbystep/v0.py): save_checkpoint()
# stores the model and optimizer state dicts together with the epoch count and the lists of losses (numpy
# floats from np.mean), and load_checkpoint() reads the file back with a bare torch.load(filename): on PyTorch
# 2.6 the weights-only unpickler refuses the numpy scalars and resuming training fails with UnpicklingError.
# evidence: dvgodoy/PyTorchStepByStep#61 ("UnpicklingError when loading model checkpoint with torch.load in
# PyTorch 2.6"; the author: "You're absolutely right, and I have already updated Chapters 2 and 2.1, as well as
# the files in the StepByStep folder"), commit dvgodoy/PyTorchStepByStep@2a2201db6fc07549004c67613aeb7c8262b67a37
import numpy as np
import torch


class StepByStep(object):
    def __init__(self, model, loss_fn, optimizer):
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.model.to(self.device)
        self.train_loader = None
        self.val_loader = None
        self.losses = []
        self.val_losses = []
        self.total_epochs = 0
        self.train_step_fn = self._make_train_step_fn()

    def set_loaders(self, train_loader, val_loader=None):
        self.train_loader = train_loader
        self.val_loader = val_loader

    def _make_train_step_fn(self):
        def perform_train_step_fn(x, y):
            self.model.train()
            yhat = self.model(x)
            loss = self.loss_fn(yhat, y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            return loss.item()
        return perform_train_step_fn

    def _mini_batch(self):
        mini_batch_losses = []
        for x_batch, y_batch in self.train_loader:
            x_batch = x_batch.to(self.device)
            y_batch = y_batch.to(self.device)
            mini_batch_losses.append(self.train_step_fn(x_batch, y_batch))
        return np.mean(mini_batch_losses)

    def train(self, n_epochs, seed=42):
        for epoch in range(n_epochs):
            self.total_epochs += 1
            loss = self._mini_batch()
            self.losses.append(loss)

    def save_checkpoint(self, filename):
        checkpoint = {'epoch': self.total_epochs,
                      'model_state_dict': self.model.state_dict(),
                      'optimizer_state_dict': self.optimizer.state_dict(),
                      'loss': self.losses,
                      'val_loss': self.val_losses}
        torch.save(checkpoint, filename)

    def load_checkpoint(self, filename):
        checkpoint = torch.load(filename)  # BUG TL810: PyTorch 2.6 loads with weights_only=True by default: the numpy floats in the checkpoint are refused (UnpicklingError)

        self.model.load_state_dict(checkpoint['model_state_dict'])
        self.optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
        self.total_epochs = checkpoint['epoch']
        self.losses = checkpoint['loss']
        self.val_losses = checkpoint['val_loss']
        self.model.train()
