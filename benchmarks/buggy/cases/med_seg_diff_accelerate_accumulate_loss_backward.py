# MedSegDiff's training driver (driver.py), just ported to accelerate: an Accelerator built with
# gradient_accumulation_steps (default 4) and mixed_precision from the command line, model, optimizer and
# loader prepared, and the step under `with accelerator.accumulate(model):` calling `loss.backward()`
# directly. accelerate divides the loss by the accumulation steps (and scales it under fp16) only in
# `accelerator.backward(loss)`: with a plain backward the accumulated gradient is 4x too large.
# evidence: lucidrains/med-seg-diff-pytorch#6 ("Slight error in accelerator": "found a slight bug where I
# did loss.backward() instead of accelerator.backward(loss)"; merged by the author), commit
# lucidrains/med-seg-diff-pytorch@e58f12c72d488b3d40af2c957b376963facb10cb
import argparse

import torch
import torchvision.transforms as transforms
from accelerate import Accelerator
from torch.optim import AdamW
from tqdm import tqdm

from med_seg_diff_pytorch import MedSegDiff, Unet
from med_seg_diff_pytorch.dataset import ISICDataset


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('-mp', '--mixed_precision', type=str, default="no", choices=["no", "fp16", "bf16"])
    parser.add_argument('-ga', '--gradient_accumulation_steps', type=int, default=4)
    parser.add_argument('-lr', '--learning_rate', type=float, default=5e-4)
    parser.add_argument('-is', '--image_size', type=int, default=128)
    parser.add_argument('-dd', '--data_path', default='./data')
    parser.add_argument('-e', '--epochs', type=int, default=10)
    parser.add_argument('-bs', '--batch_size', type=int, default=8)
    return parser.parse_args()


def load_data(args):
    transform_train = transforms.Compose([transforms.Resize((args.image_size, args.image_size)), transforms.ToTensor()])
    dataset = ISICDataset(args.data_path, 'train.csv', 'images', transform=transform_train, training=True, flip_p=0.5)
    return torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True)


def main():
    args = parse_args()
    accelerator = Accelerator(
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        mixed_precision=args.mixed_precision,
    )
    model = Unet(dim=64, image_size=args.image_size, dim_mults=(1, 2, 4, 8), mask_channels=1, input_img_channels=3)
    data_loader = load_data(args)
    optimizer = AdamW(model.parameters(), lr=args.learning_rate)
    running_loss = 0.0
    model, optimizer, data_loader = accelerator.prepare(model, optimizer, data_loader)
    diffusion = MedSegDiff(model, timesteps=args.epochs).to(accelerator.device)
    for epoch in range(args.epochs):
        for (img, mask) in tqdm(data_loader):
            with accelerator.accumulate(model):
                loss = diffusion(mask, img)
                accelerator.log({'loss': loss})
                loss.backward()  # BUG TL708: under accelerator.accumulate the loss must go through accelerator.backward (divided by the accumulation steps, scaled under fp16)
                optimizer.step()
                optimizer.zero_grad()
        running_loss += loss.item() * img.size(0)
        print('Training Loss : {:.4f}'.format(running_loss / len(data_loader)))


if __name__ == '__main__':
    main()
