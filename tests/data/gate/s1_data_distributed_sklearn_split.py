"""TL105 through `torch.distributed.init_process_group` and sklearn's `train_test_split` without
`random_state`, imported under another name."""
import numpy as np
import torch.distributed as dist
from sklearn.model_selection import train_test_split as split

dist.init_process_group("nccl")
X = np.load("x.npy")
y = np.load("y.npy")
X_train, X_val, y_train, y_val = split(X, y, test_size=0.2)
model.fit(X_train, y_train, validation_data=(X_val, y_val))
