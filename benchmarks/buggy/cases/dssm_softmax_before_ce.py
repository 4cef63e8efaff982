# A Deep Semantic Similarity Model in PyTorch: the model ends in a Softmax over the candidate scores,
# and its output is fed to CrossEntropyLoss, which applies log-softmax again.
# evidence: nishnik/Deep-Semantic-Similarity-Model-PyTorch#2 ("Softmax and CrossEntropyLoss": the author:
# "That was a mistake, thanks for pointing out")
import torch
import torch.nn as nn
import torch.nn.functional as F


class CDSSM(nn.Module):
    def __init__(self, word_depth=3 * 10000, k=300, l=128, j=4):
        super().__init__()
        self.query_conv = nn.Conv1d(word_depth, k, 3)
        self.query_sem = nn.Linear(k, l)
        self.doc_conv = nn.Conv1d(word_depth, k, 3)
        self.doc_sem = nn.Linear(k, l)
        self.learn_gamma = nn.Conv1d(1, 1, 1)
        self.j = j

    def forward(self, q, pos, negs):
        q = torch.tanh(self.query_sem(torch.max(torch.tanh(self.query_conv(q.transpose(1, 2))), 2)[0]))
        docs = [pos] + negs
        sems = [torch.tanh(self.doc_sem(torch.max(torch.tanh(self.doc_conv(d.transpose(1, 2))), 2)[0])) for d in docs]
        dots = torch.stack([(q * s).sum(1) for s in sems], dim=1)
        with_gamma = self.learn_gamma(dots.unsqueeze(1)).squeeze(1)
        prob = F.softmax(with_gamma, dim=1)  # BUG TL403: (reported where the softmax is taken) the model's output is already softmaxed; CrossEntropyLoss wants logits
        return prob


model = CDSSM()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
sample_size = 10
l_Qs = [torch.randn(1, 20, 3 * 10000) for _ in range(sample_size)]
pos_l_Ds = [torch.randn(1, 50, 3 * 10000) for _ in range(sample_size)]
neg_l_Ds = [[torch.randn(1, 50, 3 * 10000) for _ in range(4)] for _ in range(sample_size)]
y = torch.zeros(1, dtype=torch.long)

for i in range(sample_size):
    y_pred = model(l_Qs[i], pos_l_Ds[i], neg_l_Ds[i])
    loss = criterion(y_pred, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
