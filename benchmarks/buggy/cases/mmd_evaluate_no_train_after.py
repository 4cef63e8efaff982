# A multimodal dialogue model's train.py: evaluate() switches the model to eval mode to disable
# dropout, and the training loop never switches it back, so dropout stays off after the first
# evaluation.
# evidence: shubhamagarwal92/mmd#14 ("model.eval() in train.py": after evaluate, no model.train();
# solution: after the evaluate call in train.py add model.train())
import torch
import torch.nn as nn

from modules.models import HierarchicalEncoderDecoder
from utils.data import get_loader


def evaluate(model, loader, criterion):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for batch in loader:
            text, image, target = batch
            output = model(text, image)
            total += criterion(output.view(-1, output.size(-1)), target.view(-1)).item()
    return total / len(loader)


def train(model, train_loader, val_loader, epochs=10, val_step=1000):
    criterion = nn.CrossEntropyLoss(ignore_index=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
    model.train()
    step = 0
    for epoch in range(epochs):
        for batch in train_loader:
            text, image, target = batch
            optimizer.zero_grad()
            output = model(text, image)
            loss = criterion(output.view(-1, output.size(-1)), target.view(-1))
            loss.backward()
            optimizer.step()
            step += 1
            if step % val_step == 0:
                val_loss = evaluate(model, val_loader, criterion)  # BUG TL702: evaluate() leaves the model in eval mode; training goes on without dropout
                print(epoch, step, val_loss)


model = HierarchicalEncoderDecoder(src_vocab_size=26422, tgt_vocab_size=26422, src_emb_dim=512, tgt_emb_dim=512)
train(model, get_loader("train"), get_loader("valid"))
