# A multimodal benchmark's supervised-learning training structure: the validation pass calls
# model.eval() and then model.train() again before running the validation batches, so validation
# runs in training mode (dropout on).
# evidence: pliang279/MultiBench#26 ("Did you forget switch model train/eval state?": model.eval() at
# training_structures/Supervised_Learning.py line 169 and model.train() a few lines later; fixed by
# removing the model.train() calls in the validation code)
import torch
from torch import nn


def train(encoders, fusion, head, train_dataloader, valid_dataloader, total_epochs, lr=0.001):
    model = nn.Sequential(*encoders, fusion, head)
    op = torch.optim.RMSprop(model.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(total_epochs):
        model.train()
        for j in train_dataloader:
            op.zero_grad()
            out = model(j[0])
            loss = criterion(out, j[-1])
            loss.backward()
            op.step()
        model.eval()
        with torch.no_grad():
            totalloss = 0.0
            pred = []
            true = []
            for j in valid_dataloader:
                model.train()
                out = model(j[0])  # BUG TL702: validation runs after model.train(): dropout is on while evaluating
                loss = criterion(out, j[-1])
                totalloss += loss * len(j[-1])
                pred.append(torch.argmax(out, 1))
                true.append(j[-1])
