#!/usr/bin/env python3
# A minimal self-attention model on MNIST written as one script (model_and_script.py, two-space indents):
# the epoch's average loss and accuracy are accumulated as `e_train += e_batch/len(loader_train)`, keeping
# every batch's autograd graph alive for the whole epoch.
# evidence: jostmey/NakedAttention#1 ("Memory issues caused by += with pytorch graph objects": ran out of
# RAM; `.detach()` fixes it; the author: "Fixed. Thanks!!", commit 2aa6b4ca9dedc87ad2dc0fa5bee0fdc32b9b6fc1)
import dataplumbing as dp
import torch
import torchmetrics


class SelfAttentionModel(torch.nn.Module):
  def __init__(self, num_steps, num_channels, num_outputs, **kwargs):
    super().__init__(**kwargs)
    self.K = torch.nn.Parameter((2.0*torch.rand(num_channels, num_channels)-1.0)/num_channels**0.5)
    self.Q = torch.nn.Parameter((2.0*torch.rand(num_channels, num_channels)-1.0)/num_channels**0.5)
    self.V = torch.nn.Parameter((2.0*torch.rand(num_channels, num_channels)-1.0)/num_channels**0.5)
    self.softmax = torch.nn.Softmax(dim=1)
    self.out = torch.nn.Linear(num_steps*num_channels, num_outputs)

  def forward(self, x):
    batch_size, num_steps, num_channels = x.shape
    y = []
    for i in range(batch_size):
      x_i = x[i,:,:]
      w_i = self.softmax(torch.matmul(torch.matmul(x_i, self.Q), torch.matmul(x_i, self.K).T)/num_channels**0.5)
      y.append(torch.matmul(w_i, torch.matmul(x_i, self.V)))
    y = torch.stack(y, axis=0)
    return self.out(y.reshape([batch_size, num_steps*num_channels]))


model = SelfAttentionModel(num_steps=28**2, num_channels=1, num_outputs=10)
probability = torch.nn.Softmax(dim=1)
loss = torch.nn.CrossEntropyLoss()
accuracy = torchmetrics.classification.MulticlassAccuracy(num_classes=10)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

xs_train, ys_train, xs_val, ys_val, xs_test, ys_test = dp.load_mnist(seed=46525)
dataset_train = torch.utils.data.TensorDataset(xs_train, ys_train)
sampler_train = torch.utils.data.RandomSampler(dataset_train, replacement=True)
loader_train = torch.utils.data.DataLoader(dataset=dataset_train, batch_size=16, sampler=sampler_train, drop_last=True)

for i in range(128):

  model.train()
  e_train = 0.0
  a_train = 0.0
  for xs_batch, ys_batch in iter(loader_train):
    ls_batch = model(xs_batch)
    ps_batch = probability(ls_batch)
    e_batch = loss(ls_batch, ys_batch)
    a_batch = accuracy(ps_batch, ys_batch)
    optimizer.zero_grad()
    e_batch.backward()
    optimizer.step()
    e_train += e_batch/len(loader_train)  # BUG TL703: the loss tensor is summed with its graph: every batch's graph stays alive for the epoch
    a_train += a_batch/len(loader_train)

  model.eval()
  with torch.no_grad():
    ls_val = model(xs_val)
    e_val = loss(ls_val, ys_val)
    a_val = accuracy(probability(ls_val), ys_val)

  print('i: '+str(i), 'e_train: {:.5f}'.format(float(e_train)/0.693), 'e_val: {:.5f}'.format(float(e_val)/0.693), sep='\t')
