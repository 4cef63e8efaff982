"""Training an image classifier with PyTorch Lightning: a LightningModule around a backbone, a
LightningDataModule, a Trainer with its default logger and checkpoints.

Our own transcription, for the trainlint probe tests, in the shape of Lightning-AI/pytorch-lightning
examples/pytorch/basics/backbone_image_classifier.py (Apache-2.0): `Backbone` (two linear layers),
`LitClassifier(backbone, learning_rate)` with `forward`, `training_step` / `validation_step` computing
`F.cross_entropy`, `self.log`, `configure_optimizers` with Adam, `MyDataModule` splitting a dataset into
train/validation loaders, and `trainer.fit(model, datamodule=...)` with Lightning's default root
directory (the working directory: `lightning_logs/`, checkpoints). `LightningCLI` is replaced by argparse
(jsonargparse is not needed), MNIST by random images of the same shape. Run as the real script:

    python lit_image_classifier.py --max_epochs 1
"""

import argparse

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split

import lightning as L


class Backbone(torch.nn.Module):
    def __init__(self, hidden_dim=128):
        super().__init__()
        self.l1 = torch.nn.Linear(28 * 28, hidden_dim)
        self.l2 = torch.nn.Linear(hidden_dim, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        x = torch.relu(self.l1(x))
        x = self.l2(x)
        return x


class LitClassifier(L.LightningModule):
    def __init__(self, backbone=None, learning_rate=0.0001):
        super().__init__()
        self.save_hyperparameters(ignore=["backbone"])
        if backbone is None:
            backbone = Backbone()
        self.backbone = backbone

    def forward(self, x):
        # use forward for inference/predictions
        return self.backbone(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = F.cross_entropy(y_hat, y)
        self.log("train_loss", loss, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = F.cross_entropy(y_hat, y)
        self.log("valid_loss", loss, on_step=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)


class MyDataModule(L.LightningDataModule):
    def __init__(self, batch_size: int = 32):
        super().__init__()
        generator = torch.Generator().manual_seed(42)
        dataset = TensorDataset(torch.rand(640, 1, 28, 28, generator=generator),
                                torch.randint(0, 10, (640,), generator=generator))
        self.mnist_train, self.mnist_val = random_split(dataset, [512, 128], generator=generator)
        self.batch_size = batch_size

    def train_dataloader(self):
        return DataLoader(self.mnist_train, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.mnist_val, batch_size=self.batch_size)


def cli_main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=0.0001)
    args = parser.parse_args()
    model = LitClassifier(Backbone(), learning_rate=args.learning_rate)
    datamodule = MyDataModule(batch_size=args.batch_size)
    trainer = L.Trainer(max_epochs=args.max_epochs, accelerator="cpu")
    trainer.fit(model, datamodule=datamodule)


if __name__ == "__main__":
    L.seed_everything(1234)
    cli_main()
