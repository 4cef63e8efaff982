# ray-skorch's README example (examples/readme_example.py): a module class whose forward ends in
# nn.Softmax is handed, as a class, to RayTrainNeuralNet with criterion=nn.CrossEntropyLoss (also a class):
# the loss applies log-softmax to probabilities.
# evidence: Yard1/ray-skorch#18 ("Remove softmax from output": CrossEntropyLoss takes logits and performs a
# LogSoftmax internally; merged by the maintainer)
import argparse

import numpy as np
import ray
from sklearn.datasets import make_classification
from torch import nn

from ray_skorch import RayTrainNeuralNet

X, y = make_classification(1000, 20, n_informative=10, random_state=0)
X = X.astype(np.float32)
y = y.astype(np.int64)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=False, default=None, type=str)
    parser.add_argument("--num-cpus", type=int, default=None)
    args = parser.parse_args()
    ray.init(address=args.address, num_cpus=args.num_cpus)

    class MyModule(nn.Module):
        def __init__(self, num_units=10, nonlin=nn.ReLU()):
            super(MyModule, self).__init__()
            self.dense0 = nn.Linear(20, num_units)
            self.nonlin = nonlin
            self.dropout = nn.Dropout(0.5)
            self.dense1 = nn.Linear(num_units, num_units)
            self.output = nn.Linear(num_units, 2)
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, X, **kwargs):
            X = self.nonlin(self.dense0(X))
            X = self.dropout(X)
            X = self.nonlin(self.dense1(X))
            X = self.softmax(self.output(X))  # BUG TL403: probabilities given to nn.CrossEntropyLoss, which expects logits
            return X

    net = RayTrainNeuralNet(
        MyModule,
        num_workers=2,
        criterion=nn.CrossEntropyLoss,
        max_epochs=10,
        lr=0.1,
        iterator_train__unsqueeze_label_tensor=False,
        iterator_valid__unsqueeze_label_tensor=False,
    )
    net.fit(X, y)
