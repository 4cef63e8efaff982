# The MNIST example of a Concrete Dropout implementation (mnist_example.py): the last layer of the MLP is
# wrapped as nn.Sequential(fc4, nn.Softmax(dim=1)), so the model outputs probabilities, and training uses
# F.cross_entropy on that output, which applies log-softmax again.
# evidence: danielkelshaw/ConcreteDropout#12 ("Fixed Softmax Issue": "Fixed the issue highlighted by @as595
# pertaining to the unnecessary use of softmax. Resolves: #11"; the author's commit 0b8ecad makes the model
# return fc4's logits)
import argparse

import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data
from torch import Tensor
from torchvision import datasets, transforms

import condrop
from condrop import ConcreteDropout


@condrop.concrete_regulariser
class MLPConcreteDropout(nn.Module):
    def __init__(self, n_hidden: int = 512) -> None:
        super().__init__()
        self.fc1 = nn.Linear(784, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_hidden)
        self.fc3 = nn.Linear(n_hidden, n_hidden)
        self.fc4 = nn.Linear(n_hidden, 10)
        w, d = 1e-6, 1e-3
        self.cd1 = ConcreteDropout(weight_regulariser=w, dropout_regulariser=d)
        self.cd2 = ConcreteDropout(weight_regulariser=w, dropout_regulariser=d)
        self.cd3 = ConcreteDropout(weight_regulariser=w, dropout_regulariser=d)
        self.cd4 = ConcreteDropout(weight_regulariser=w, dropout_regulariser=d)
        self.relu = nn.ReLU()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: Tensor) -> Tensor:
        x = x.view(-1, 784)
        x = self.cd1(x, nn.Sequential(self.fc1, self.relu))
        x = self.cd2(x, nn.Sequential(self.fc2, self.relu))
        x = self.cd3(x, nn.Sequential(self.fc3, self.relu))
        x = self.cd4(x, nn.Sequential(self.fc4, self.softmax))  # BUG TL403: (reported where the softmax is taken) the model returns probabilities that F.cross_entropy softmaxes again
        return x


def train(model, trainloader, optimiser, epoch, device):
    train_loss = 0.0
    model.train()
    for batch_idx, (data, labels) in enumerate(trainloader):
        data, labels = data.to(device), labels.to(device)
        optimiser.zero_grad()
        outputs = model(data)
        loss = F.cross_entropy(outputs, labels) + model.regularisation()
        train_loss += loss.item() * data.size(0)
        loss.backward()
        optimiser.step()
    return train_loss / len(trainloader.dataset)


def test(model, testloader, device):
    correct = 0
    test_loss = 0.0
    model.eval()
    for batch_idx, (data, labels) in enumerate(testloader):
        data, labels = data.to(device), labels.to(device)
        outputs = model(data)
        test_loss += F.cross_entropy(outputs, labels).item() * data.size(0)
        preds = outputs.argmax(dim=1, keepdim=True)
        correct += preds.eq(labels.view_as(preds)).sum().item()
    return test_loss / len(testloader.dataset), correct / len(testloader.dataset)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Concrete Dropout - MNIST Classification Example.")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--testbatch-size", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    trainset = datasets.MNIST("./data", train=True, download=True, transform=transform)
    testset = datasets.MNIST("./data", train=False, download=True, transform=transform)
    trainloader = torch.utils.data.DataLoader(trainset, batch_size=args.batch_size)
    testloader = torch.utils.data.DataLoader(testset, batch_size=args.testbatch_size)
    model = MLPConcreteDropout().to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train_loss = train(model, trainloader, optimiser, epoch, device)
        test_loss, accuracy = test(model, testloader, device)
