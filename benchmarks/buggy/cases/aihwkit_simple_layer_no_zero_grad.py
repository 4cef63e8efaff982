# An analog-hardware simulation library's first example: one analog linear layer trained with its
# analog SGD for 100 steps; the loop never zeroes the gradients, so they add up and the loss goes
# down, then up again.
# evidence: IBM/aihwkit#446 (examples/01_simple_layer.py and 02_multiple_layers.py miss opt.zero_grad())
from torch import Tensor
from torch.nn.functional import mse_loss

from aihwkit.nn import AnalogLinear
from aihwkit.optim import AnalogSGD
from aihwkit.simulator.configs import SingleRPUConfig
from aihwkit.simulator.configs.devices import ConstantStepDevice

x = Tensor([[0.1, 0.2, 0.4, 0.3], [0.2, 0.1, 0.1, 0.3]])
y = Tensor([[1.0, 0.5], [0.7, 0.3]])

model = AnalogLinear(4, 2, bias=True, rpu_config=SingleRPUConfig(device=ConstantStepDevice()))

opt = AnalogSGD(model.parameters(), lr=0.1)
opt.regroup_param_groups(model)

for epoch in range(100):
    pred = model(x)
    loss = mse_loss(pred, y)
    loss.backward()
    opt.step()  # BUG TL701: no opt.zero_grad() in the loop: gradients accumulate across steps
    print("Loss error: {:.16f}".format(loss))
