# A course on PyTorch for audio, "02 Training a feed forward network/train.py": the network's forward
# returns nn.Softmax of the logits, the loss is nn.CrossEntropyLoss, and model and loss are handed through
# train() to train_single_epoch().
# evidence: musikalkemist/pytorchforaudio#10 ("Removed SoftMax": SoftMax is not needed when using
# CrossEntropyLoss; approved by the maintainer: "You are absolutely correct", merged into the
# release/v2.0-update branch)
import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision.transforms import ToTensor

BATCH_SIZE = 128
EPOCHS = 10
LEARNING_RATE = 0.001


class FeedForwardNet(nn.Module):

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_layers = nn.Sequential(
            nn.Linear(28 * 28, 256),
            nn.ReLU(),
            nn.Linear(256, 10)
        )
        self.softmax = nn.Softmax(dim=1)

    def forward(self, input_data):
        x = self.flatten(input_data)
        logits = self.dense_layers(x)
        predictions = self.softmax(logits)  # BUG TL403: probabilities given to nn.CrossEntropyLoss, which expects logits
        return predictions


def download_mnist_datasets():
    train_data = datasets.MNIST(root="data", train=True, download=True, transform=ToTensor())
    validation_data = datasets.MNIST(root="data", train=False, download=True, transform=ToTensor())
    return train_data, validation_data


def create_data_loader(train_data, batch_size):
    train_dataloader = DataLoader(train_data, batch_size=batch_size)
    return train_dataloader


def train_single_epoch(model, data_loader, loss_fn, optimiser, device):
    for input, target in data_loader:
        input, target = input.to(device), target.to(device)
        prediction = model(input)
        loss = loss_fn(prediction, target)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    print(f"loss: {loss.item()}")


def train(model, data_loader, loss_fn, optimiser, device, epochs):
    for i in range(epochs):
        print(f"Epoch {i+1}")
        train_single_epoch(model, data_loader, loss_fn, optimiser, device)


if __name__ == "__main__":
    train_data, _ = download_mnist_datasets()
    train_dataloader = create_data_loader(train_data, BATCH_SIZE)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    feed_forward_net = FeedForwardNet().to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimiser = torch.optim.Adam(feed_forward_net.parameters(), lr=LEARNING_RATE)
    train(feed_forward_net, train_dataloader, loss_fn, optimiser, device, EPOCHS)
    torch.save(feed_forward_net.state_dict(), "feedforwardnet.pth")
