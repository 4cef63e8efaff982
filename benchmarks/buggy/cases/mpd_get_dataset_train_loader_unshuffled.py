# Motion planning diffusion (mpd-public, mpd/trainer/train_loaders.py): a get_dataset() helper builds the
# dataset class named in the config, splits it with random_split and returns a training DataLoader that
# does not shuffle; the training script iterates over it every epoch. (The training loop is shortened.)
# evidence: joaoamcarvalho/mpd-public#6 ("I am curious whether the argument shuffle=True is missing for the
# train_dataloader"; the author: "Hey, thanks for catching that. It should definitely have shuffle=True.")
import os

import torch
from torch.utils.data import DataLoader, random_split

from mpd import datasets, losses, models


def get_model(model_class=None, **kwargs):
    Model = getattr(models, model_class)
    return Model(**kwargs)


def get_loss(loss_class=None, **kwargs):
    LossClass = getattr(losses, loss_class)
    return LossClass(**kwargs).loss_fn


def get_dataset(dataset_class=None,
                dataset_subdir=None,
                batch_size=2,
                val_set_size=0.05,
                results_dir=None,
                save_indices=False,
                **kwargs):
    DatasetClass = getattr(datasets, dataset_class)
    full_dataset = DatasetClass(dataset_subdir=dataset_subdir, **kwargs)

    # split into train and validation
    train_subset, val_subset = random_split(full_dataset, [1 - val_set_size, val_set_size])
    train_dataloader = DataLoader(train_subset, batch_size=batch_size)  # BUG TL203: the training loader is not shuffled
    val_dataloader = DataLoader(val_subset, batch_size=batch_size)

    if save_indices:
        torch.save(train_subset.indices, os.path.join(results_dir, 'train_subset_indices.pt'))
        torch.save(val_subset.indices, os.path.join(results_dir, 'val_subset_indices.pt'))

    return train_subset, train_dataloader, val_subset, val_dataloader


def train(model=None, train_dataloader=None, train_subset=None, epochs=None, loss_fn=None, optimizers=None, **kwargs):
    model.train()
    for epoch in range(epochs):
        for step, train_batch_dict in enumerate(train_dataloader):
            losses_dict, _ = loss_fn(model, train_batch_dict, train_subset.dataset)
            train_loss = sum(losses_dict.values())
            for optim in optimizers:
                optim.zero_grad()
            train_loss.backward()
            for optim in optimizers:
                optim.step()


def experiment(dataset_class='TrajectoryDataset', dataset_subdir='EnvSimple2D-RobotPointMass', batch_size=128,
               diffusion_model_class='GaussianDiffusionModel', loss_class='GaussianDiffusionLoss', lr=1e-4,
               num_train_steps=500000, results_dir='logs', **kwargs):
    train_subset, train_dataloader, val_subset, val_dataloader = get_dataset(
        dataset_class=dataset_class, dataset_subdir=dataset_subdir, batch_size=batch_size,
        results_dir=results_dir, save_indices=True)
    model = get_model(model_class=diffusion_model_class)
    loss_fn = get_loss(loss_class=loss_class)
    train(model=model, train_dataloader=train_dataloader, train_subset=train_subset, epochs=num_train_steps // len(train_dataloader),
          loss_fn=loss_fn, optimizers=[torch.optim.Adam(lr=lr, params=model.parameters())])


if __name__ == '__main__':
    experiment()
