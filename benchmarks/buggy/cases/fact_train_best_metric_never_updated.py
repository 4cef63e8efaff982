# FACT's action-segmentation training script (train.py): every eval_every iterations the model is evaluated
# and the checkpoint kept as best when its F1@0.50 is >= best_metric, but best_metric stays at its initial 0,
# so every evaluation replaces the "best" checkpoint and the one reported and saved as best is the last.
# (The model, matching criterion and logging are shortened here.)
# evidence: ZijiaLewisLu/CVPR2024-FACT#9 ("best_metric update question": "The best_metric parameter will not
# be updated during training and will always be 0"; the author: "Thank you! I fixed the code."), fixed in
# ZijiaLewisLu/CVPR2024-FACT@683a57c
import os

import torch
from torch import optim
from torch.utils.data import DataLoader

from .models.blocks import FACT
from .utils.evaluate import Checkpoint, evaluate


def main(cfg, dataset, test_dataset, logdir, ckptdir, savedir, run):
    trainloader = DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True)
    testloader = DataLoader(test_dataset, batch_size=cfg.batch_size, shuffle=False)
    net = FACT(cfg, dataset.input_dimension, dataset.nclasses)
    net.cuda()
    optimizer = optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    global_step = 0
    best_ckpt, best_metric = None, 0
    for eidx in range(cfg.epoch):
        for batch_idx, (vnames, seq_list, train_label_list, eval_label_list) in enumerate(trainloader):
            seq_list = [s.cuda() for s in seq_list]
            train_label_list = [s.cuda() for s in train_label_list]
            optimizer.zero_grad()
            loss, video_saves = net(seq_list, train_label_list, compute_loss=True)
            loss.backward()
            optimizer.step()

            if global_step != 0 and (global_step+1) % cfg.aux.eval_every == 0:
                test_ckpt = evaluate(global_step, net, testloader, run, savedir)
                if test_ckpt.metrics['F1@0.50'] >= best_metric:
                    best_ckpt = test_ckpt  # BUG TL692: best_metric is never updated, so every evaluation becomes the "best" checkpoint
                network_file = ckptdir + '/network.iter-' + str(global_step+1) + '.net'
                net.save_model(network_file)
            global_step += 1

    print(f'Best Checkpoint: {best_ckpt.iteration}')
    best_ckpt.compute_metrics()
    best_ckpt.save(os.path.join(logdir, 'best_ckpt.gz'))
