# A U-Net for segmenting roots in soil images (src/unet/train.py): SGD with a per-epoch MultiStepLR; the
# epoch loop steps the scheduler at its top, behind an `if scheduler:` guard, before the batch loop runs
# the optimizer, so every milestone arrives one epoch early (PyTorch warns "Detected call of
# `lr_scheduler.step()` before `optimizer.step()`").
# evidence: Abe404/segmentation_of_roots_in_soil_with_unet#4 ("Fix off-by-one error in scheduler use",
# merged), commit Abe404/segmentation_of_roots_in_soil_with_unet@8d0f478b81473da840c7d6466e314de4043171e1
# (moves `scheduler.step()` after the epoch's training)
import time
import sys

import numpy as np
import torch
from torch.nn.functional import softmax
from torch.optim.lr_scheduler import MultiStepLR

from torch.utils.data import DataLoader

from datasets import UNetTrainDataset
from datasets import UNetValDataset
from unet import UNetGN
from loss import combined_loss
from data_utils import get_files_split


def get_data_loaders():
    val_photos, train_photos, val_annotations, train_annotations = get_files_split()
    train_set = UNetTrainDataset(train_annotations, train_photos)
    val_set = UNetValDataset(val_annotations, val_photos)
    train_loader = DataLoader(train_set, batch_size=4, shuffle=True, num_workers=8, drop_last=False, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=8, drop_last=False, pin_memory=True, shuffle=False, num_workers=8)
    return train_loader, val_loader


def kaiming_conv_init(module):
    if isinstance(module, torch.nn.Conv2d) or isinstance(module, torch.nn.ConvTranspose2d):
        torch.nn.init.kaiming_normal_(module.weight.data)


def evaluate(cnn, loader):
    loss_sum = 0
    all_preds = []
    all_true = []
    cnn.eval()
    with torch.no_grad():
        for x_batch, y_batch in loader:
            tensor_y_batch = y_batch.type(torch.LongTensor).cuda()
            outputs = cnn(x_batch.cuda())
            loss = combined_loss(outputs, tensor_y_batch)
            loss_sum += loss.item()
            root_probs = softmax(outputs, 1)[:, 1, :]
            all_preds.append((root_probs > 0.5).view(-1).int().data.cpu().numpy())
            all_true.append(y_batch.view(-1).int().numpy())
    return loss_sum / len(all_true), np.concatenate(all_preds), np.concatenate(all_true)


def train_unet(outdir):
    train_loader, val_loader = get_data_loaders()
    epochs = 80
    cnn = UNetGN()
    cnn.apply(kaiming_conv_init)
    optimizer = torch.optim.SGD(cnn.parameters(), lr=0.01, momentum=0.99, nesterov=True, weight_decay=0.00001)
    scheduler = MultiStepLR(optimizer, milestones=[30, 60, 90], gamma=0.3)
    cnn.cuda()
    global_step = 0

    for epoch in range(1, epochs + 1):
        print("Starting epoch", epoch)
        train_loader.dataset.assign_new_tiles()
        cnn.train()
        if scheduler:
            scheduler.step()  # BUG TL704: stepped at the top of the epoch, before this epoch's optimizer steps
        epoch_start = time.time()

        all_preds = []
        all_true = []
        loss_sum = 0

        for step, (x_batch, y_batch) in enumerate(train_loader):
            x_batch = x_batch.cuda()
            y_batch = y_batch.cuda()
            optimizer.zero_grad()
            outputs = cnn(x_batch)
            softmaxed = softmax(outputs, 1)
            root_probs = softmaxed[:, 1, :]
            predicted = root_probs > 0.5
            loss = combined_loss(outputs, y_batch)
            loss.backward()
            optimizer.step()
            all_preds.append(predicted.view(-1).cpu().data.numpy())
            all_true.append(y_batch.view(-1).cpu().numpy())
            loss_sum += loss.cpu().item()
            global_step += 1

        duration = time.time() - epoch_start
        print(f"\nTraining: epoch duration: {duration:.1f}")
        val_loss, val_preds, val_true = evaluate(cnn, val_loader)


if __name__ == "__main__":
    train_unet("../output/unet/train_output")
