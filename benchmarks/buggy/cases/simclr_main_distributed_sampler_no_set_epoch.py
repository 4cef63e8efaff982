# SimCLR's training entry point (main.py): main(gpu, args) is spawned per GPU, builds a DistributedSampler
# only for multi-node runs (`if args.nodes > 1:`), hands loader, model and optimizer to train(), and the
# epoch loop never calls train_sampler.set_epoch(epoch): the same shuffle order every epoch.
# evidence: Spijkervet/SimCLR#26 ("update distributed sample": calling set_epoch() at the beginning of each
# epoch is necessary to make shuffling work properly; merged, commit de910aec1c8c5d2451e204add9ad384a4835e25c)
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP

from model import load_optimizer, save_model
from modules import SimCLR, NT_Xent, get_resnet
from modules.transformations import TransformsSimCLR
from utils import yaml_config_hook


def train(args, train_loader, model, criterion, optimizer):
    loss_epoch = 0
    for step, ((x_i, x_j), _) in enumerate(train_loader):
        optimizer.zero_grad()
        x_i = x_i.cuda(non_blocking=True)
        x_j = x_j.cuda(non_blocking=True)
        h_i, h_j, z_i, z_j = model(x_i, x_j)
        loss = criterion(z_i, z_j)
        loss.backward()
        optimizer.step()
        loss_epoch += loss.item()
    return loss_epoch


def main(gpu, args):
    rank = args.nr * args.gpus + gpu
    if args.nodes > 1:
        dist.init_process_group("nccl", rank=rank, world_size=args.world_size)
        torch.cuda.set_device(gpu)

    train_dataset = torchvision.datasets.CIFAR10(args.dataset_dir, download=True,
                                                 transform=TransformsSimCLR(size=args.image_size))

    if args.nodes > 1:
        train_sampler = torch.utils.data.distributed.DistributedSampler(  # BUG TL209: set_epoch() is never called: the same order every epoch
            train_dataset, num_replicas=args.world_size, rank=rank, shuffle=True
        )
    else:
        train_sampler = None

    train_loader = torch.utils.data.DataLoader(
        train_dataset,
        batch_size=args.batch_size,
        shuffle=(train_sampler is None),
        drop_last=True,
        num_workers=args.workers,
        sampler=train_sampler,
    )

    encoder = get_resnet(args.resnet, pretrained=False)
    model = SimCLR(args, encoder, encoder.fc.in_features).to(args.device)
    optimizer, scheduler = load_optimizer(args, model)
    criterion = NT_Xent(args.batch_size, args.temperature, args.device, args.world_size)
    if args.nodes > 1:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = DDP(model, device_ids=[gpu])

    for epoch in range(args.start_epoch, args.epochs):
        loss_epoch = train(args, train_loader, model, criterion, optimizer)
        if args.nr == 0 and scheduler:
            scheduler.step()
        if args.nr == 0 and epoch % 10 == 0:
            save_model(args, model, optimizer)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="SimCLR")
    config = yaml_config_hook("./config/config.yaml")
    for k, v in config.items():
        parser.add_argument(f"--{k}", default=v, type=type(v))
    args = parser.parse_args()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "8000"
    args.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    args.world_size = args.gpus * args.nodes
    if args.nodes > 1:
        mp.spawn(main, args=(args,), nprocs=args.gpus, join=True)
    else:
        main(0, args)
