# A human-activity-recognition CNN in PyTorch: forward ends with F.softmax and training uses
# nn.CrossEntropyLoss on that output.
# evidence: jindongwang/Deep-learning-activity-recognition#10 ("Bug in code": nn.CrossEntropyLoss applies
# softmax itself; the author: "I shouldn't use F.softmax before nn.CrossEntropyLoss! I'll update the code")
import torch
import torch.nn as nn
import torch.nn.functional as F


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(9, 32, (1, 9)), nn.ReLU(), nn.MaxPool2d((1, 2), stride=2))
        self.conv2 = nn.Sequential(nn.Conv2d(32, 64, (1, 9)), nn.ReLU(), nn.MaxPool2d((1, 2), stride=2))
        self.fc1 = nn.Sequential(nn.Linear(64 * 26, 1000), nn.ReLU())
        self.fc2 = nn.Sequential(nn.Linear(1000, 500), nn.ReLU())
        self.fc3 = nn.Linear(500, 6)

    def forward(self, x):
        out = self.conv1(x)
        out = self.conv2(out)
        out = out.reshape(-1, 64 * 26)
        out = self.fc1(out)
        out = self.fc2(out)
        out = self.fc3(out)
        out = F.softmax(out, dim=1)  # BUG TL403: (reported where the softmax is taken) the network output is softmaxed before CrossEntropyLoss
        return out


def train(model, optimizer, train_loader, test_loader):
    n_batch = len(train_loader.dataset) // 64
    criterion = nn.CrossEntropyLoss()
    for e in range(100):
        model.train()
        for index, (sample, target) in enumerate(train_loader):
            sample, target = sample.float(), target.long()
            sample = sample.view(-1, 9, 1, 128)
            output = model(sample)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


model = Network()
optimizer = torch.optim.SGD(params=model.parameters(), lr=0.01, momentum=0.9)
