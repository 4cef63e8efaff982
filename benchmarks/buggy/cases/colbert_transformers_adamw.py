# The training module of a late-interaction retrieval model: a hand-written PyTorch loop that takes
# AdamW and the warmup schedule from transformers; transformers 4.50 removed its AdamW.
# evidence: stanford-futuredata/ColBERT#397 (colbert/training/training.py: ImportError: cannot import
# name 'AdamW' from 'transformers'); fix proposed in stanford-futuredata/ColBERT#393
import torch
import torch.nn as nn
from transformers import AdamW, get_linear_schedule_with_warmup  # BUG TL802: transformers.AdamW was removed

from colbert.modeling.colbert import ColBERT
from colbert.training.reader import LazyBatcher


def train(config, triples, queries, collection):
    reader = LazyBatcher(config, triples, queries, collection)
    colbert = ColBERT(name=config.checkpoint, colbert_config=config)
    colbert.train()

    optimizer = AdamW(filter(lambda p: p.requires_grad, colbert.parameters()), lr=config.lr, eps=1e-8)
    optimizer.zero_grad()
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=config.warmup, num_training_steps=config.maxsteps)
    labels = torch.zeros(config.bsize, dtype=torch.long)

    for batch_idx, BatchSteps in zip(range(config.maxsteps), reader):
        for batch in BatchSteps:
            queries_, passages, target_scores = batch
            scores = colbert(queries_, passages).view(-1, config.nway)
            loss = nn.CrossEntropyLoss()(scores, labels[: scores.size(0)])
            loss.backward()
        torch.nn.utils.clip_grad_norm_(colbert.parameters(), 2.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
