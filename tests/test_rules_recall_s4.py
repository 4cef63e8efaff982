"""TL403 follows probabilities through the forms real training code gives them: a loop over a softmax, the
exponential of a log-softmax, reshapes, a layer handed to a wrapper module, a parameter the forward rebinds,
a softmax head kept on `self`, a model passed down through two functions. Each form is reported on the
line where the activation is taken; its correct twin beside it is quiet."""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source


def lint(source: str):
    found = lint_source(textwrap.dedent(source), "train.py", Settings(select=["TL403"]))
    return [f for f in found if f.code == "TL403"]


def lines(source: str) -> list[int]:
    return [f.start.row for f in lint(source)]


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


# -- a loop over the rows of a softmax, each row given to the loss -----------------------------------

# in the shape of mlelarge/graph_neural_net's triplet loss (mlelarge/graph_neural_net#37)
LOOP_OVER_SOFTMAX = """
import torch
import torch.nn as nn

class RowLoss(nn.Module):
    def __init__(self, loss=nn.CrossEntropyLoss(reduction="sum")):
        super().__init__()
        self.loss = loss

    def forward(self, scores, _target):
        total = 0
        probs = torch.softmax(scores, -1)
        for row in probs:
            target = torch.arange(row.shape[0])
            total += self.loss(row, target)
        return total
"""


def test_tl403_loss_on_each_row_of_a_softmax():
    assert lines(LOOP_OVER_SOFTMAX) == [line_of(LOOP_OVER_SOFTMAX, "probs = torch.softmax(")]
    # the fix: the rows of the scores
    fixed = LOOP_OVER_SOFTMAX.replace("probs = torch.softmax(scores, -1)", "probs = scores")
    assert lines(fixed) == []
    # the loop runs over something else than the probabilities
    other = LOOP_OVER_SOFTMAX.replace("for row in probs:", "for row in scores:")
    assert lines(other) == []


ENUMERATED = """
import torch.nn.functional as F

def step(model, batch, labels):
    probs = F.softmax(model(batch), dim=-1)
    loss = 0.0
    for i, p in enumerate(probs):
        loss = loss + F.cross_entropy(p.unsqueeze(0), labels[i].unsqueeze(0))
    return loss
"""


def test_tl403_enumerated_rows_of_a_softmax():
    assert lines(ENUMERATED) == [line_of(ENUMERATED, "probs = F.softmax(")]
    assert lines(ENUMERATED.replace("for i, p in enumerate(probs):", "for i, p in enumerate(model(batch)):")) == []


# -- the exponential of a log-softmax, reshaped, given to CrossEntropyLoss ---------------------------

# in the shape of bowang-lab/Transformer-GCN-QA's model (bowang-lab/Transformer-GCN-QA#32)
EXP_LOG_SOFTMAX = """
import torch
import torch.nn as nn

class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(128, 1)
        self.log_softmax = nn.LogSoftmax(dim=0)

    def forward(self, candidates, target=None):
        scores = self.score(candidates).squeeze(-1)
        probs = torch.exp(self.log_softmax(scores))
        if target is not None:
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(probs.view(-1, len(candidates)), target)
            return probs, loss
        return probs
"""


def test_tl403_exponential_of_a_log_softmax_given_to_cross_entropy():
    [f] = lint(EXP_LOG_SOFTMAX)
    assert f.start.row == line_of(EXP_LOG_SOFTMAX, "probs = torch.exp(")
    assert "(through `probs.view(" in f.message
    # the fix: the loss gets the scores, the probabilities are only returned
    fixed = EXP_LOG_SOFTMAX.replace("loss_fct(probs.view(", "loss_fct(scores.view(")
    assert lines(fixed) == []
    # log-probabilities to NLLLoss: what it expects
    nll = EXP_LOG_SOFTMAX.replace("nn.CrossEntropyLoss()", "nn.NLLLoss()").replace(
        "loss_fct(probs.view(", "loss_fct(self.log_softmax(scores).view(")
    assert lines(nll) == []
    # the exponential of something else than a log-softmax
    other = EXP_LOG_SOFTMAX.replace("torch.exp(self.log_softmax(scores))", "torch.exp(scores)")
    assert lines(other) == []


def test_tl403_method_exponential_and_nll_loss_on_probabilities():
    src = """
    import torch.nn.functional as F

    def step(model, x, y):
        log_probs = F.log_softmax(model(x), dim=-1)
        probs = log_probs.exp()
        return F.nll_loss(probs, y)
    """
    assert lines(src) == [line_of(src, "probs = log_probs.exp()")]
    assert lines(src.replace("F.nll_loss(probs, y)", "F.nll_loss(log_probs, y)")) == []


# -- a layer ending in a softmax handed to a wrapper module from outside the file ---------------------

# in the shape of danielkelshaw/ConcreteDropout's MNIST example (danielkelshaw/ConcreteDropout#12)
WRAPPED_LAYER = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from condrop import ConcreteDropout

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)
        self.cd1 = ConcreteDropout(weight_regulariser=1e-6, dropout_regulariser=1e-3)
        self.cd2 = ConcreteDropout(weight_regulariser=1e-6, dropout_regulariser=1e-3)
        self.relu = nn.ReLU()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = x.view(-1, 784)
        x = self.cd1(x, nn.Sequential(self.fc1, self.relu))
        x = self.cd2(x, nn.Sequential(self.fc2, self.softmax))
        return x

def train(model, loader, optimiser):
    for data, labels in loader:
        optimiser.zero_grad()
        loss = F.cross_entropy(model(data), labels)
        loss.backward()
        optimiser.step()

model = MLP()
train(model, loader, torch.optim.Adam(model.parameters()))
"""


def test_tl403_softmax_layer_run_by_a_wrapper_module():
    [f] = lint(WRAPPED_LAYER)
    assert f.start.row == line_of(WRAPPED_LAYER, "nn.Sequential(self.fc2, self.softmax)")
    assert f.start.column == textwrap.dedent(WRAPPED_LAYER).splitlines()[f.start.row - 1].index("self.softmax") + 1
    # the fix: the last layer gives logits
    fixed = WRAPPED_LAYER.replace("nn.Sequential(self.fc2, self.softmax)", "self.fc2")
    assert lines(fixed) == []
    # the wrapper is given more than the layer and its input: what it returns is its own business
    attention = WRAPPED_LAYER.replace("self.cd2(x, nn.Sequential(self.fc2, self.softmax))",
                                      "self.cd2(x, x, nn.Sequential(self.fc2, self.softmax))")
    assert lines(attention) == []
    # a wrapper defined in the file is not assumed to return the layer's output
    local = WRAPPED_LAYER.replace("from condrop import ConcreteDropout",
                                  "class ConcreteDropout(nn.Module):\n    def forward(self, x, layer):\n"
                                  "        return x")
    assert lines(local) == []


def test_tl403_checkpointed_softmax_head():
    src = """
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Sequential(nn.Linear(64, 10), nn.Softmax(dim=-1))

        def forward(self, x):
            return checkpoint(self.head, x, use_reentrant=False)

    model = Net()
    loss = nn.CrossEntropyLoss()(model(x), y)
    """
    assert lines(src) == [line_of(src, "nn.Softmax(dim=-1)")]
    assert lines(src.replace(", nn.Softmax(dim=-1))", ")")) == []


# -- a forward that rebinds its parameter, a softmax head kept on self ---------------------------------

REBOUND_PARAMETER = """
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        x = self.fc(x)
        x = F.softmax(x, dim=1)
        return x

model = Net()
criterion = nn.CrossEntropyLoss()
loss = criterion(model(images), labels)
"""


def test_tl403_forward_that_rebinds_its_parameter_to_a_softmax():
    assert lines(REBOUND_PARAMETER) == [line_of(REBOUND_PARAMETER, "x = F.softmax(x, dim=1)")]
    assert lines(REBOUND_PARAMETER.replace("        x = F.softmax(x, dim=1)\n", "")) == []
    # the softmax is taken, then the logits are computed again from the input
    recomputed = REBOUND_PARAMETER.replace("        return x\n", "        x = self.fc(x)\n        return x\n", 1)
    assert lines(recomputed) == []


# in the shape of the classifier of eriklindernoren/PyTorch-GAN's pixelda
SELF_SEQUENTIAL_HEAD = """
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 64, 3, 2, 1), nn.LeakyReLU(0.2))
        self.output_layer = nn.Sequential(nn.Linear(64 * 16 * 16, n_classes), nn.Softmax())

    def forward(self, img):
        h = self.features(img)
        h = h.view(h.size(0), -1)
        label = self.output_layer(h)
        return label

classifier = Classifier(10)
task_loss = torch.nn.CrossEntropyLoss()
label_pred = classifier(fake)
loss = (task_loss(label_pred, labels) + task_loss(classifier(real), labels)) / 2
"""


def test_tl403_softmax_head_kept_on_self_reported_once():
    # two losses reach the same softmax: one finding
    assert lines(SELF_SEQUENTIAL_HEAD) == [line_of(SELF_SEQUENTIAL_HEAD, "nn.Softmax())")]
    assert lines(SELF_SEQUENTIAL_HEAD.replace(", nn.Softmax())", ")")) == []


# -- the model handed down through two functions -------------------------------------------------------

# the model reaches the loss through fit() and step(): the file calls fit() with the model
PASSED_DOWN = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 4)
        self.out = nn.Softmax(dim=-1)

    def forward(self, x):
        return self.out(self.fc(x))

class Logits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 4)

    def forward(self, x):
        return self.fc(x)

def step(model, batch, criterion):
    x, y = batch
    outputs = model(x)
    if outputs.dim() == 1:
        outputs = outputs.unsqueeze(0)
    return criterion(outputs, y)

def fit(model, loader, epochs=2):
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for batch in loader:
            step(model, batch, criterion).backward()

fit(Net(), loader)
"""


def test_tl403_model_passed_through_two_functions():
    assert lines(PASSED_DOWN) == [line_of(PASSED_DOWN, "return self.out(self.fc(x))")]
    # fit() is given a model whose forward returns logits
    assert lines(PASSED_DOWN.replace("fit(Net(), loader)", "fit(Logits(), loader)")) == []
    # fit() is called with both models: the source cannot tell which one a finding is about
    assert lines(PASSED_DOWN + "fit(Logits(), loader)\n") == []


# -- a module-level name rebound after a `def` of the same name, a model moved to the device in train() --

REBOUND_NAMES = """
import torch
import torch.nn as nn

def loss_fn(pred, target):
    return ((pred - target) ** 2).mean()

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 3)

    def forward(self, x):
        x = self.layer(x)
        x = nn.Softmax(dim=1)(x)
        return x

def train(model, loader, optimizer):
    model = model.to("cpu")
    for x_batch, y_batch in loader:
        pred = model(x_batch)
        loss = loss_fn(pred, y_batch)
        loss.backward()

loss_fn = nn.CrossEntropyLoss()
train(Model(), loader, optimizer)
"""


def test_tl403_names_rebound_after_a_def_and_a_parameter_moved_to_the_device():
    # `loss_fn` is the CrossEntropyLoss bound last, `model` inside train() the Model moved to the device
    assert lines(REBOUND_NAMES) == [line_of(REBOUND_NAMES, "x = nn.Softmax(dim=1)(x)")]
    # the squared error defined above is the one used when nothing rebinds it
    assert lines(REBOUND_NAMES.replace("loss_fn = nn.CrossEntropyLoss()\n", "")) == []
    assert lines(REBOUND_NAMES.replace("        x = nn.Softmax(dim=1)(x)\n", "")) == []


# -- a trainer's methods hand the model down; the model object is the module-level one ----------------

# in the shape of IBM/dstc7-noesis's SupervisedTrainer (IBM/dstc-noesis#18), with the model built beside it
TRAINER_METHODS = """
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss

class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 8)
        self.final_layer = nn.Softmax()

    def forward(self, x):
        output = self.final_layer(self.proj(x))
        return output

class SupervisedTrainer:
    def __init__(self, loss_func=CrossEntropyLoss()):
        self.loss_func = loss_func

    def _train_batch(self, x, target, model):
        loss_func = self.loss_func
        outputs = model(x)
        if len(outputs.size()) == 1:
            outputs = outputs.unsqueeze(0)
        loss = loss_func(outputs, target)
        loss.backward()

    def train(self, model, data):
        for x, y in data:
            self._train_batch(x, y, model)

model = Scorer(16)
SupervisedTrainer().train(model, data)
"""


def test_tl403_model_handed_down_by_a_trainer_method():
    assert lines(TRAINER_METHODS) == [line_of(TRAINER_METHODS, "output = self.final_layer(")]
    assert lines(TRAINER_METHODS.replace("self.final_layer = nn.Softmax()", "self.final_layer = nn.Identity()")) == []
    # the file never says which model the trainer gets: nothing is guessed
    assert lines(TRAINER_METHODS.replace("model = Scorer(16)\n", "")) == []
