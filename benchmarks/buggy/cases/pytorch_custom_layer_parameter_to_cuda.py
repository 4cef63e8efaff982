# A custom layer holding a learnable threshold, created as `nn.Parameter(torch.randn(1)).to('cuda')` in
# __init__ and used inside an nn.Sequential moved to the GPU: .to() on a Parameter returns a plain tensor,
# so the model has no parameters at all (`list(model.parameters())` is empty) and training would never
# update the threshold.
# evidence: pytorch/pytorch#39062 ("regarding to('cuda') in init": list(model.parameters()) gives []; the
# maintainer: "calling .to() on an nn.Parameter gives a torch.Tensor, not an nn.Parameter", use
# nn.Parameter(torch.randn(1, device='cuda')) instead; a known issue, pytorch/pytorch#9303)
import torch, torch.nn as nn

class CustomLayer(nn.Module):
  def __init__(self):
    super().__init__()
    self.threshold = nn.Parameter(torch.randn(1)).to('cuda')  # BUG TL309: .to() returns a plain tensor: the threshold is not a registered parameter
  def forward(self, input):
    return input

model = nn.Sequential(CustomLayer()).to('cuda')
list(model.parameters())
