# The "realistic, complex" MNISTDataModule of Lightning's DataModule documentation, trained on several GPUs
# as the reporter did: setup() runs in every process and splits the training set with random_split from the
# unseeded global generator, so each rank draws a different train/validation split and the validation
# images of one rank are training images of another (validation leakage).
# evidence: Lightning-AI/pytorch-lightning#18638 ("Tutorial DataModule leads to Validation data leakage in
# Multiprocessing"); fixed by the maintainer in #18651 ("Set the generator seed in `random_split` usages in
# the examples", commit c631726b5c: random_split(..., generator=torch.Generator().manual_seed(42)))
import lightning.pytorch as pl
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, random_split
from torchvision import transforms
from torchvision.datasets import MNIST


class MNISTDataModule(pl.LightningDataModule):
    def __init__(self, data_dir: str = "./"):
        super().__init__()
        self.data_dir = data_dir
        self.transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])

    def prepare_data(self):
        MNIST(self.data_dir, train=True, download=True)
        MNIST(self.data_dir, train=False, download=True)

    def setup(self, stage: str):
        if stage == "fit":
            mnist_full = MNIST(self.data_dir, train=True, transform=self.transform)
            self.mnist_train, self.mnist_val = random_split(mnist_full, [55000, 5000])  # BUG TL105: an unseeded split drawn in every DDP process: each rank gets a different train/val split
        if stage == "test":
            self.mnist_test = MNIST(self.data_dir, train=False, transform=self.transform)

    def train_dataloader(self):
        return DataLoader(self.mnist_train, batch_size=32)

    def val_dataloader(self):
        return DataLoader(self.mnist_val, batch_size=32)

    def test_dataloader(self):
        return DataLoader(self.mnist_test, batch_size=32)


class LitClassifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(28 * 28, 128)
        self.l2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x.view(x.size(0), -1))))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    mnist = MNISTDataModule("./data")
    model = LitClassifier()
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", max_epochs=5)
    trainer.fit(model, mnist)
