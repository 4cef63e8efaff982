# A pedestrian-light detection model trained with a combined MSE + cross-entropy loss; the running
# losses are summed as tensors, holding the graphs and filling the RAM.
# evidence: samuelyu2002/ImVisible#2 (fix: change all `+= loss` into `+= loss.item()`; "yes, that was
# it, now it works fine"; the author committed the changes)
import torch
import torch.nn as nn

from network import LYTNet
from dataset import TrafficLightDataset

net = LYTNet()
train_loader = torch.utils.data.DataLoader(TrafficLightDataset("train.csv", "images/"), batch_size=32, shuffle=True)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(net.parameters(), lr=0.001)

for epoch in range(800):
    running_loss = 0.0
    running_loss_MSE = 0.0
    running_loss_cross_entropy = 0.0
    for data in train_loader:
        images, labels, points = data
        optimizer.zero_grad()
        pred_classes, pred_direc = net(images)
        cross_entropy = loss_fn(pred_classes, labels)
        MSE = nn.MSELoss()(pred_direc, points)
        loss = 0.5 * MSE + 0.5 * cross_entropy
        loss.backward()
        optimizer.step()
        running_loss += loss  # BUG TL703: tensors with graphs accumulated over the epoch
        running_loss_MSE += MSE
        running_loss_cross_entropy += cross_entropy
    print(epoch, running_loss / len(train_loader))
