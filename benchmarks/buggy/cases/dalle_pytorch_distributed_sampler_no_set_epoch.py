# DALLE-pytorch's training script (train_dalle.py): a DistributedSampler is built only when the dataset
# does not shuffle itself (`if not is_shuffle:`), the DataLoader is handed to a distributed backend whose
# distribute() returns the loader the epoch loop iterates, and set_epoch() is never called: every epoch
# visits the samples in the same order.
# evidence: lucidrains/DALLE-pytorch#230 ("use data_sampler.set_epoch to avoid having the same order in each
# epoch"; merged, commit 724e11e62ae14139713ccb4d6b692ac8758f5b91)
import argparse

import torch
from torch.nn.utils import clip_grad_norm_
from torch.optim import Adam
from torch.utils.data import DataLoader

from dalle_pytorch import DALLE, distributed_utils
from dalle_pytorch.loader import TextImageDataset
from dalle_pytorch.tokenizer import tokenizer

parser = argparse.ArgumentParser()
parser.add_argument('--image_text_folder', type=str, required=True)
parser.add_argument('--fp16', action='store_true')
parser = distributed_utils.wrap_arg_parser(parser)
args = parser.parse_args()

EPOCHS = 20
BATCH_SIZE = 4
LEARNING_RATE = 3e-4
GRAD_CLIP_NORM = 0.5

distr_backend = distributed_utils.set_backend_from_args(args)
distr_backend.initialize()
using_deepspeed = distributed_utils.using_backend(distributed_utils.DeepSpeedBackend)

is_shuffle = not distributed_utils.using_backend(distributed_utils.HorovodBackend)

ds = TextImageDataset(args.image_text_folder, text_len=256, image_size=256, tokenizer=tokenizer, shuffle=is_shuffle)

if not is_shuffle:
    data_sampler = torch.utils.data.distributed.DistributedSampler(  # BUG TL209: set_epoch() is never called: the same order every epoch
        ds,
        num_replicas=distr_backend.get_world_size(),
        rank=distr_backend.get_rank()
    )
else:
    data_sampler = None

dl = DataLoader(ds, batch_size=BATCH_SIZE, shuffle=is_shuffle, drop_last=True, sampler=data_sampler)

dalle = DALLE(vae=None, num_text_tokens=10000, text_seq_len=256, dim=512, depth=2, heads=8).cuda()
opt = Adam(dalle.parameters(), lr=LEARNING_RATE)

(distr_dalle, distr_opt, distr_dl, distr_scheduler) = distr_backend.distribute(
    args=args,
    model=dalle,
    optimizer=opt,
    model_parameters=dalle.parameters(),
    training_data=ds if using_deepspeed else dl,
)

for epoch in range(EPOCHS):
    for i, (text, images) in enumerate(distr_dl):
        text, images = map(lambda t: t.cuda(), (text, images))
        loss = distr_dalle(text, images, return_loss=True)
        if using_deepspeed:
            distr_dalle.backward(loss)
            distr_dalle.step()
        else:
            loss.backward()
            clip_grad_norm_(distr_dalle.parameters(), GRAD_CLIP_NORM)
            distr_opt.step()
            distr_opt.zero_grad()
