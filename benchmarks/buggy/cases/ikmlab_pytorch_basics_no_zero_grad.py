# A university lab's PyTorch basics notebook (course material, "PyTorch-基本功能.ipynb"): a Dataset of
# y = 2x^2 + 3x + 17, a two-layer MLP, SGD; the "optimization" cell and the final training cell run
# backward and step on every batch without ever clearing the gradients (comments translated, the cells'
# printing and plotting dropped).
# evidence: IKMLab/course_material#3 ("Missing `optimizer.zero_grad` in `torch` tutorial", closed by its author
# with "Done."), fixed in IKMLab/course_material@17ee9199ad19ae35bdea7a63a12c587d1b9fbab6 ("add
# optimizer.zero_grad": adds optimizer.zero_grad() after both optimizer.step() calls)
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import SGD
from torch.utils.data import DataLoader, Dataset


class MyDataset(Dataset):
    def __init__(self, size):
        self.x = torch.rand(size) * 2 - 1
        self.y = 2 * self.x ** 2 + 3 * self.x + 17

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index], self.y[index]


def collate_fn(batch):
    x_list = []
    y_list = []
    for x, y in batch:
        x_list.append([x])
        y_list.append([y])
    return [torch.tensor(x_list), torch.tensor(y_list)]


class MyModel(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim):
        super(MyModel, self).__init__()
        self.layer1 = nn.Linear(in_features=in_dim, out_features=hid_dim)
        self.layer2 = nn.Linear(in_features=hid_dim, out_features=out_dim)

    def forward(self, batch_x):
        h = self.layer1(batch_x)
        a = F.relu(h)
        y = self.layer2(a)
        return y


my_dataset = MyDataset(10)
my_data_loader = DataLoader(my_dataset, batch_size=3, shuffle=True, collate_fn=collate_fn)
my_model = MyModel(in_dim=1, hid_dim=10, out_dim=1)
criterion = nn.MSELoss()

# optimization cell
optimizer = SGD(my_model.parameters(), lr=0.0001)
for batch_x, batch_y in my_data_loader:
    pred_y = my_model(batch_x)
    loss = criterion(pred_y, batch_y)
    loss.backward()
    optimizer.step()  # BUG TL701: gradients are never cleared: each step applies the sum of all previous ones

# training cell
if torch.cuda.is_available():
    device = torch.device("cuda:0")
else:
    device = torch.device("cpu")

train_dataset = MyDataset(1000)
test_dataset = MyDataset(500)
batch_size = 50
n_epoch = 5
hid_dim = 10
train_data_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=True, collate_fn=collate_fn)
test_data_loader = DataLoader(test_dataset, batch_size=batch_size, shuffle=True, collate_fn=collate_fn)

model = MyModel(in_dim=1, hid_dim=hid_dim, out_dim=1)
model = model.to(device)
criterion = nn.MSELoss()
optimizer = SGD(model.parameters(), lr=0.0001)

for epoch in range(n_epoch):
    for batch_x, batch_y in train_data_loader:
        batch_x = batch_x.to(device)
        batch_y = batch_y.to(device)
        pred_y = model(batch_x)
        loss = criterion(pred_y, batch_y)
        loss.backward()
        optimizer.step()  # BUG TL701: no zero_grad in the training loop either

    with torch.no_grad():
        total_loss = 0
        for batch_x, batch_y in test_data_loader:
            batch_x = batch_x.to(device)
            batch_y = batch_y.to(device)
            pred_y = model(batch_x)
            loss = criterion(pred_y, batch_y)
            total_loss += float(loss) / len(test_data_loader)
        print("Epoch {}, testing loss: {}".format(epoch, total_loss))
