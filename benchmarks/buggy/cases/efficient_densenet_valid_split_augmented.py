# efficient_densenet_pytorch's demo (demo.py): CIFAR-10 loaded once with the training transforms (random crop
# and flip); train() splits it into training and validation indices with two SubsetRandomSamplers and builds
# both loaders over that same augmented dataset, so the validation images are randomly cropped and flipped and
# the best-model choice rests on augmented data. (The DenseNet model and logging are shortened here.)
# evidence: gpleiss/efficient_densenet_pytorch#51 ("Validation dataset is being augmented as well": the
# transformation was applied prior to the train/val split; the author: "Thanks for the catch. This has been
# updated"), fixed in gpleiss/efficient_densenet_pytorch@b0a156d87b736d90c3e27933e8e4d0114bd5ef36 ("make valid
# set use test transform")
import os

import torch
import torch.nn.functional as F
from torchvision import datasets, transforms

from models import DenseNet


def train_epoch(model, loader, optimizer):
    model.train()
    for batch_idx, (input, target) in enumerate(loader):
        output = model(input)
        loss = F.cross_entropy(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_epoch(model, loader):
    model.eval()
    errors = 0
    with torch.no_grad():
        for input, target in loader:
            output = model(input)
            errors += (output.argmax(dim=1) != target).sum().item()
    return errors / len(loader.sampler)


def train(model, train_set, test_set, save, n_epochs=300, valid_size=5000,
          batch_size=64, lr=0.1, wd=0.0001, momentum=0.9, seed=None):
    if seed is not None:
        torch.manual_seed(seed)

    if valid_size:
        indices = torch.randperm(len(train_set))
        train_indices = indices[:len(indices) - valid_size]
        train_sampler = torch.utils.data.sampler.SubsetRandomSampler(train_indices)
        valid_indices = indices[len(indices) - valid_size:]
        valid_sampler = torch.utils.data.sampler.SubsetRandomSampler(valid_indices)

    test_loader = torch.utils.data.DataLoader(test_set, batch_size=batch_size, shuffle=False)
    if valid_size:
        train_loader = torch.utils.data.DataLoader(train_set, batch_size=batch_size, sampler=train_sampler)
        valid_loader = torch.utils.data.DataLoader(train_set, batch_size=batch_size, sampler=valid_sampler)  # BUG TL190: the validation split is read from the dataset built with the training augmentations
    else:
        train_loader = torch.utils.data.DataLoader(train_set, batch_size=batch_size, shuffle=True)
        valid_loader = None

    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, nesterov=True, weight_decay=wd)
    best_error = 1
    for epoch in range(n_epochs):
        train_epoch(model, train_loader, optimizer)
        valid_error = test_epoch(model, valid_loader if valid_loader else test_loader)
        if valid_loader and valid_error < best_error:
            best_error = valid_error
            torch.save(model.state_dict(), os.path.join(save, 'model.dat'))


def demo(data, save, depth=100, growth_rate=12, valid_size=5000, n_epochs=300, batch_size=64, seed=None):
    block_config = [(depth - 4) // 6 for _ in range(3)]
    mean = [0.5071, 0.4867, 0.4408]
    stdv = [0.2675, 0.2565, 0.2761]
    train_transforms = transforms.Compose([
        transforms.RandomCrop(32, padding=4),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=mean, std=stdv),
    ])
    test_transforms = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize(mean=mean, std=stdv),
    ])
    train_set = datasets.CIFAR10(data, train=True, transform=train_transforms, download=True)
    test_set = datasets.CIFAR10(data, train=False, transform=test_transforms, download=False)
    model = DenseNet(growth_rate=growth_rate, block_config=block_config, num_classes=10, small_inputs=True)
    train(model=model, train_set=train_set, test_set=test_set, save=save,
          valid_size=valid_size, n_epochs=n_epochs, batch_size=batch_size, seed=seed)
