# gromo's dataset helper (src/gromo/utils/datasets.py): the training set is split with random_split into
# training and validation Subsets, then `train_data.dataset.transform` is set to the augmenting transform and
# `val_data.dataset.transform` to the plain one; both Subsets wrap the same dataset object, so the second
# assignment replaces the first and the training data is never augmented. (MNIST, class filtering and the
# argument checks are shortened here.)
# evidence: growingnet/gromo#58 ("fix: data augmentation": "when setting the augmentation for the validation
# set, it automatically sets the same augmentation for the training set ... the augmentation was not applied to
# the training set"; a maintainer: "Thank you for the bug fix ! Definitely a well hidden one."; merged), commit
# growingnet/gromo@e483e2550253f3a3caeb8e82c97428f0c7062ccf
from math import ceil, floor

import torch
from torch.utils import data
from torchvision import datasets, transforms


def get_dataset(
    dataset_name: str,
    dataset_path: str,
    split_train_val: float = 0.1,
    data_augmentation: list[str] | None = None,
    seed: int | None = 0,
) -> tuple[data.Dataset, data.Dataset, data.Dataset]:
    known_datasets = {"cifar10": datasets.CIFAR10, "cifar100": datasets.CIFAR100}
    datasets_transform = [
        transforms.ToTensor(),
        transforms.Normalize(mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616)),
        transforms.Lambda(lambda x: x.view(-1)),
    ]
    augmentation_transforms = []
    if data_augmentation:
        for aug in data_augmentation:
            if aug == "horizontal_flip":
                augmentation_transforms.append(transforms.RandomHorizontalFlip())
            elif aug == "crop":
                augmentation_transforms.append(transforms.RandomCrop(32, padding=4, padding_mode="reflect"))

    dataset = known_datasets[dataset_name]
    train_val_data = dataset(root=dataset_path, train=True, download=True, transform=None)
    test_data = dataset(root=dataset_path, train=False, download=True,
                        transform=transforms.Compose(datasets_transform))

    train_size = ceil(len(train_val_data) * (1 - split_train_val))
    val_size = floor(len(train_val_data) * split_train_val)
    if seed is not None:
        torch.manual_seed(seed)
    train_data, val_data = torch.utils.data.random_split(
        train_val_data, [train_size, val_size]
    )
    train_data.dataset.transform = transforms.Compose(
        datasets_transform + augmentation_transforms
    )
    val_data.dataset.transform = transforms.Compose(datasets_transform)  # BUG TL190: both Subsets share one dataset: this replaces the training augmentation

    return train_data, val_data, test_data
