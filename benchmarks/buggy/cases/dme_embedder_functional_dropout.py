# Dynamic meta-embeddings (embedders.py): the concatenating and the projecting embedders apply
# `F.dropout(out, p=self.args.emb_dropout)` in forward() without `training=self.training`, so the embedding
# dropout stays on when the model is put in eval mode for validation and test.
# evidence: facebookresearch/DME#3 ("Dropout is still enabled during inference": "out =
# F.dropout(out, p=self.args.emb_dropout)" triggers dropout during inference; the maintainer: "It's been
# fixed now"), fixed in facebookresearch/DME@090ac4476fb6b305f497b32b9bffbb54963e7e6d ("fixed dropout in
# embedder": nn.Dropout modules; the reported accuracies rose)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SingleEmbedder(nn.Module):
    def __init__(self, args, logger, emb_path, emb_size):
        super(SingleEmbedder, self).__init__()
        self.args = args
        self.embedder = nn.Embedding(len(args.vocab_stoi), emb_size, padding_idx=args.vocab_stoi['<pad>'])
        bound = math.sqrt(3.0 / emb_size)
        self.embedder.weight.data.uniform_(-1.0 * bound, bound)
        self.embedder.cuda()
        self.embedder.weight.requires_grad = False

    def forward(self, x):
        return self.embedder(x)


class CatEmbedder(nn.Module):
    def __init__(self, args, logger):
        super(CatEmbedder, self).__init__()
        self.args = args
        self.emb_names = sorted([name for name, _, _ in args.embeds])
        self.embedders = nn.ModuleDict({
            name: SingleEmbedder(args, logger, path, dim) for name, path, dim in args.embeds
        })

    def forward(self, words):
        out = torch.cat([self.embedders[name](words) for name in self.emb_names], -1)
        if self.args.nonlin == 'relu':
            out = F.relu(out)
        if self.args.emb_dropout > 0.0:
            out = F.dropout(out, p=self.args.emb_dropout)  # BUG TL311: functional dropout without training=self.training: still on at evaluation
        return out


class ProjSumEmbedder(nn.Module):
    def __init__(self, args, logger):
        super(ProjSumEmbedder, self).__init__()
        self.args = args
        self.emb_names = sorted([name for name, _, _ in args.embeds])
        self.embedders = nn.ModuleDict()
        self.projectors = nn.ModuleDict()
        for name, path, dim in args.embeds:
            self.embedders.update({name: SingleEmbedder(args, logger, path, dim)})
            self.projectors.update({name: nn.Linear(dim, args.proj_embed_sz).cuda()})
        self.attn_0 = nn.Linear(args.proj_embed_sz, 2)
        self.attn_1 = nn.Linear(2, 1)

    def forward(self, words):
        projected = [self.projectors[name](self.embedders[name](words)) for name in self.emb_names]
        projected_cat = torch.cat([p.unsqueeze(2) for p in projected], 2)
        m_attn = F.softmax(self.attn_1(self.attn_0(projected_cat)).squeeze(3), dim=2)
        out = (projected_cat * m_attn.unsqueeze(3)).sum(2)
        if self.args.nonlin == 'relu':
            out = F.relu(out)
        if self.args.emb_dropout > 0.0:
            out = F.dropout(out, p=self.args.emb_dropout)  # BUG TL311: functional dropout without training=self.training: still on at evaluation
        return out
