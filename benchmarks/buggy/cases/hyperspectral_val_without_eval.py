# A hyperspectral image classification toolbox (models.py, forked from DeepHyperX): get_model(name, ...)
# builds one of many networks (several with nn.Dropout) and returns it with its optimizer and criterion;
# train() calls net.train() at the top of each epoch and, after the batches, val(net, val_loader, ...),
# which runs the network under no_grad without ever calling net.eval(): validation runs with dropout on.
# evidence: eecn/Hyperspectral-Classification#21 ("why is model.eval() not used in the validation
# stage?"; the maintainer: it needs to be added), fixed in
# eecn/Hyperspectral-Classification@1a5f61689eae2da33b2d0e5031f990fcb92fae7d ("Change model to eval mode
# before running inference": net.eval() at the top of val())
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from tqdm import tqdm


class ChenEtAl(nn.Module):
    def __init__(self, input_channels, n_classes, patch_size=27, n_planes=32):
        super(ChenEtAl, self).__init__()
        self.conv1 = nn.Conv3d(1, n_planes, (32, 4, 4))
        self.pool1 = nn.MaxPool3d((1, 2, 2))
        self.conv2 = nn.Conv3d(n_planes, n_planes, (32, 4, 4))
        self.pool2 = nn.MaxPool3d((1, 2, 2))
        self.conv3 = nn.Conv3d(n_planes, n_planes, (32, 4, 4))
        self.features_size = n_planes * 4 * 2 * 2
        self.fc = nn.Linear(self.features_size, n_classes)
        self.dropout = nn.Dropout(p=0.5)

    def forward(self, x):
        x = self.dropout(self.pool1(F.relu(self.conv1(x))))
        x = self.dropout(self.pool2(F.relu(self.conv2(x))))
        x = self.dropout(F.relu(self.conv3(x)))
        x = x.view(-1, self.features_size)
        return self.fc(x)


def get_model(name, **kwargs):
    device = kwargs.setdefault('device', torch.device('cpu'))
    n_classes = kwargs['n_classes']
    n_bands = kwargs['n_bands']
    weights = torch.ones(n_classes)
    weights[torch.LongTensor(kwargs['ignored_labels'])] = 0.
    weights = kwargs.setdefault('weights', weights.to(device))
    if name == 'chen':
        patch_size = kwargs.setdefault('patch_size', 27)
        model = ChenEtAl(n_bands, n_classes, patch_size=patch_size)
        lr = kwargs.setdefault('learning_rate', 0.003)
        optimizer = optim.SGD(model.parameters(), lr=lr)
        criterion = nn.CrossEntropyLoss(weight=kwargs['weights'])
        kwargs.setdefault('epoch', 400)
    else:
        raise KeyError("{} model is unknown.".format(name))
    model = model.to(device)
    return model, optimizer, criterion, kwargs


def train(net, optimizer, criterion, data_loader, epoch, scheduler=None, device=torch.device('cpu'),
          val_loader=None, supervision='full'):
    net.to(device)
    val_accuracies = []
    for e in tqdm(range(1, epoch + 1), desc="Training the network"):
        net.train()
        avg_loss = 0.
        for batch_idx, (data, target) in enumerate(data_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = net(data)
            loss = criterion(output, target)
            loss.backward()
            optimizer.step()
            avg_loss += loss.item()
        avg_loss /= len(data_loader)
        if val_loader is not None:
            val_acc = val(net, val_loader, device=device, supervision=supervision)
            val_accuracies.append(val_acc)
            metric = -val_acc
        else:
            metric = avg_loss
        if isinstance(scheduler, optim.lr_scheduler.ReduceLROnPlateau):
            scheduler.step(metric)
        elif scheduler is not None:
            scheduler.step()


def val(net, data_loader, device='cpu', supervision='full'):
    accuracy, total = 0., 0.
    ignored_labels = data_loader.dataset.ignored_labels
    for batch_idx, (data, target) in enumerate(data_loader):
        with torch.no_grad():
            data, target = data.to(device), target.to(device)
            if supervision == 'full':
                output = net(data)  # BUG TL702: validation without net.eval(): dropout is on (train() left the network in train mode)
            elif supervision == 'semi':
                outs = net(data)
                output, rec = outs
            _, output = torch.max(output, dim=1)
            for pred, out in zip(output.view(-1), target.view(-1)):
                if out.item() in ignored_labels:
                    continue
                accuracy += out.item() == pred.item()
                total += 1
    return accuracy / total


# main.py of the toolbox, in the same order:
if __name__ == "__main__":
    from torch.utils import data
    from datasets import get_dataset, HyperX  # the toolbox's own datasets.py
    from utils import sample_gt
    img, gt, label_values, ignored_labels, rgb_bands, palette = get_dataset("IndianPines", "./Datasets/")
    hyperparams = {"n_classes": len(label_values), "n_bands": img.shape[-1], "ignored_labels": ignored_labels,
                   "device": torch.device("cuda")}
    model, optimizer, loss, hyperparams = get_model("chen", **hyperparams)
    train_gt, test_gt = sample_gt(gt, 0.1, mode="random")
    train_gt, val_gt = sample_gt(train_gt, 0.95, mode="random")
    train_loader = data.DataLoader(HyperX(img, train_gt, **hyperparams), batch_size=100, shuffle=True)
    val_loader = data.DataLoader(HyperX(img, val_gt, **hyperparams), batch_size=100)
    train(model, optimizer, loss, train_loader, hyperparams['epoch'], device=hyperparams['device'],
          val_loader=val_loader)
