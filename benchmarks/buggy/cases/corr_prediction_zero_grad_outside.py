# A correlation-based prediction model's main.py: zero_grad is called once, outside the training
# loop, so the gradients are accumulated along the whole training data.
# evidence: salesforce/corr_based_prediction#1 ("at line 220 in main.py, the zero_grad is outside the
# training stage, the gradients will be accumulated along the training data")
import torch
import torch.nn as nn

from model import CorrModel
from data import get_loader

model = CorrModel(hidden=256)
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
train_loader = get_loader("train", batch_size=64)

optimizer.zero_grad()
for epoch in range(50):
    model.train()
    for x, y in train_loader:
        pred = model(x)
        loss = criterion(pred, y)
        loss.backward()
        optimizer.step()  # BUG TL701: zero_grad runs once before the loop, not at each step
