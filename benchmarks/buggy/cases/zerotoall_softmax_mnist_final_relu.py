# "PyTorch Zero to All" lecture code, 09_2_softmax_mnist.py: a five-layer MLP whose forward applies F.relu to
# every Linear output including the last, then F.log_softmax, trained with F.nll_loss: the class scores are
# clipped at 0 before the log-softmax.
# evidence: hunkim/PyTorchZeroToAll#4 ("Remove relu in the final layer"; merged by the author, commit
# 878a14c05c17b552fa45df08e1a0c53d4b58225c)
from __future__ import print_function
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torchvision import datasets, transforms
from torch.autograd import Variable

batch_size = 64
train_dataset = datasets.MNIST(root='./data/', train=True, transform=transforms.ToTensor(), download=True)
train_loader = torch.utils.data.DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=True)


class Net(nn.Module):

    def __init__(self):
        super(Net, self).__init__()
        self.l1 = nn.Linear(784, 520)
        self.l2 = nn.Linear(520, 320)
        self.l3 = nn.Linear(320, 240)
        self.l4 = nn.Linear(240, 120)
        self.l5 = nn.Linear(120, 10)

    def forward(self, x):
        x = x.view(-1, 784)
        x = F.relu(self.l1(x))
        x = F.relu(self.l2(x))
        x = F.relu(self.l3(x))
        x = F.relu(self.l4(x))
        x = F.relu(self.l5(x))  # BUG TL410: a ReLU on the last layer's output: the class scores fed to log_softmax / nll_loss can never be negative
        return F.log_softmax(x)


model = Net()
optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.5)


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = Variable(data), Variable(target)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()


for epoch in range(1, 10):
    train(epoch)
