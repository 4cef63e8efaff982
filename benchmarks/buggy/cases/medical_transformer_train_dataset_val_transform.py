# Medical-Transformer's training script (train.py): two joint image/mask transforms are built, `tf_train`
# with random horizontal flips (p_flip=0.5) and `tf_val` without; the training dataset is constructed with
# `tf_val`, so the segmentation model trains with no augmentation at all. (The model choices, loss and
# validation/saving loop are shortened here.)
# evidence: jeya-maria-jose/Medical-Transformer#22 ("Is 'tf_val' used incorrectly for 'train_dataset'"; the
# author: "Fixed #31"), fixed by jeya-maria-jose/Medical-Transformer#31, commit
# jeya-maria-jose/Medical-Transformer@da3b020110fbd37c4ae2f43f8a23028253cc3c43 ("fix JointTransform applied to
# train dataset")
import argparse

import torch
from torch.utils.data import DataLoader

import lib
from metrics import LogNLLLoss
from utils import ImageToImage2D, JointTransform2D

parser = argparse.ArgumentParser(description='MedT')
parser.add_argument('--epochs', default=400, type=int)
parser.add_argument('-b', '--batch_size', default=1, type=int)
parser.add_argument('--learning_rate', default=1e-3, type=float)
parser.add_argument('--train_dataset', required=True, type=str)
parser.add_argument('--val_dataset', type=str)
parser.add_argument('--crop', type=int, default=None)
parser.add_argument('--imgsize', type=int, default=None)
args = parser.parse_args()

if args.crop is not None:
    crop = (args.crop, args.crop)
else:
    crop = None

tf_train = JointTransform2D(crop=crop, p_flip=0.5, color_jitter_params=None, long_mask=True)
tf_val = JointTransform2D(crop=crop, p_flip=0, color_jitter_params=None, long_mask=True)
train_dataset = ImageToImage2D(args.train_dataset, tf_val)  # BUG TL190: the training set gets the validation transform: the flips of tf_train are never applied
val_dataset = ImageToImage2D(args.val_dataset, tf_val)
dataloader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True)

device = torch.device("cuda")
model = lib.models.axialnet.MedT(img_size = args.imgsize, imgchan = 3)
model.to(device)
criterion = LogNLLLoss()
optimizer = torch.optim.Adam(list(model.parameters()), lr=args.learning_rate, weight_decay=1e-5)

for epoch in range(args.epochs):
    epoch_running_loss = 0
    for batch_idx, (X_batch, y_batch, *rest) in enumerate(dataloader):
        X_batch = X_batch.to(device='cuda')
        y_batch = y_batch.to(device='cuda')
        output = model(X_batch)
        loss = criterion(output, y_batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_running_loss += loss.item()
