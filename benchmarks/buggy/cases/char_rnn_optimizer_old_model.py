# The char-RNN name-classification tutorial of a practical PyTorch series, changed to use an
# optimizer: the model is instantiated twice (once after the class, once before the training loop),
# and the optimizer holds the parameters of the first instance, so the trained model never moves.
# evidence: spro/practical-pytorch#9 ("char-rnn-classification parameters update method confusion": the
# model is instantiated twice; move the optimizer below the second one; fixed in
# spro/practical-pytorch@67ac021c6525347c9d69f5a6e323d935ddaf53d1)
import torch
import torch.nn as nn

from data import n_letters, n_categories, randomTrainingExample


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.softmax(self.i2o(combined))
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


n_hidden = 128
rnn = RNN(n_letters, n_hidden, n_categories)

learning_rate = 0.005
criterion = nn.NLLLoss()
optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()
    optimizer.zero_grad()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    optimizer.step()
    return output, loss.item()


n_epochs = 100000
rnn = RNN(n_letters, n_hidden, n_categories)  # BUG TL504: a new model after the optimizer was built on the old one's parameters
for epoch in range(1, n_epochs + 1):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)
