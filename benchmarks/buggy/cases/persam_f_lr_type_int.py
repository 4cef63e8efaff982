# PerSAM-F's one-shot fine-tuning script (persam_f.py): get_arguments() declares `--lr` with type=int and a
# float default, and persam_f(args, ...) trains the mask weights with AdamW(lr=args.lr) under a cosine
# schedule. The default works, but any learning rate given on the command line fails to parse
# ("argument --lr: invalid int value: '0.01'"), and an integer one would be absurd.
# evidence: ZrrSkywalker/Personalize-SAM#19 ("persam_f.py: error: argument --lr: invalid int value: '0.01'";
# the author: "Thanks very much for pointing out! We have fixed this bug.")
import argparse
import os

import torch
import torch.nn as nn

from per_segment_anything import sam_model_registry, SamPredictor


def get_arguments():

    parser = argparse.ArgumentParser()

    parser.add_argument('--data', type=str, default='./data')
    parser.add_argument('--outdir', type=str, default='persam_f')
    parser.add_argument('--ckpt', type=str, default='./sam_vit_h_4b8939.pth')

    parser.add_argument('--lr', type=int, default=1e-3)  # BUG TL509: a learning rate declared type=int: any rate given on the command line fails to parse or is truncated
    parser.add_argument('--train_epoch', type=int, default=1000)
    parser.add_argument('--log_epoch', type=int, default=200)
    parser.add_argument('--ref_idx', type=str, default='00')

    args = parser.parse_args()
    return args


class Mask_Weights(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.ones(2, 1, requires_grad=True) / 3)


def main():
    args = get_arguments()
    images_path = args.data + '/Images/'
    for obj_name in os.listdir(images_path):
        persam_f(args, obj_name, images_path)


def persam_f(args, obj_name, images_path):
    sam = sam_model_registry["vit_h"](checkpoint=args.ckpt).cuda()
    predictor = SamPredictor(sam)
    mask_weights = Mask_Weights().cuda()
    mask_weights.train()
    optimizer = torch.optim.AdamW(mask_weights.parameters(), lr=args.lr, eps=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.train_epoch)
    for train_idx in range(args.train_epoch):
        logits = predictor.predict_with_weights(mask_weights.weights)
        loss = logits.sigmoid().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()


if __name__ == "__main__":
    main()
