"""The loop, loss and optimizer rules follow the model through the file's own functions and methods
(arguments, `self.<attr>`, globals): each real form reported, the correct form next to it quiet."""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source


def lint(source: str, select: str):
    return lint_source(textwrap.dedent(source), "train.py", Settings(select=[select]))


def lines(source: str, select: str) -> list[int]:
    return [f.start.row for f in lint(source, select) if f.code == select]


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


# -- TL702: the mode set by a helper the training loop calls -------------------------------------

# in the shape of shubhamagarwal92/mmd's train.py (shubhamagarwal92/mmd#14)
EVALUATE_HELPER = """
import torch
import torch.nn as nn

class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 64)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(64, 1000)

    def forward(self, x):
        return self.out(self.drop(self.embed(x)))

def evaluate(model, loader, criterion):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for text, target in loader:
            total += criterion(model(text), target).item()
    return total / len(loader)

def train(model, train_loader, val_loader, epochs=10):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
    model.train()
    step = 0
    for epoch in range(epochs):
        for text, target in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(text), target)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 1000 == 0:
                val_loss = evaluate(model, val_loader, criterion)

train(Seq2Seq(), get_loader("train"), get_loader("valid"))
"""


def test_tl702_helper_leaving_the_model_in_eval_mode_inside_the_training_loop():
    [f] = lint(EVALUATE_HELPER, "TL702")
    assert f.start.row == line_of(EVALUATE_HELPER, "val_loss = evaluate(")
    assert "leaves `model` in eval mode" in f.message
    # the fix of the thread: train() again after the evaluation
    fixed = EVALUATE_HELPER.replace("val_loss = evaluate(model, val_loader, criterion)",
                                    "val_loss = evaluate(model, val_loader, criterion)\n                model.train()")
    assert lines(fixed, "TL702") == []
    # the helper puts the model back in train mode itself
    restores = EVALUATE_HELPER.replace("    return total / len(loader)", "    model.train()\n    return total / len(loader)")
    assert lines(restores, "TL702") == []
    # train() at the top of each step
    top = EVALUATE_HELPER.replace("            optimizer.zero_grad()", "            model.train()\n            optimizer.zero_grad()")
    assert lines(top, "TL702") == []
    # the helper is given another model (an EMA copy): the trained one keeps its mode
    other = EVALUATE_HELPER.replace("evaluate(model, val_loader", "evaluate(ema_model, val_loader")
    assert lines(other, "TL702") == []
    # premise: the model has a layer that computes otherwise in eval mode (as in the thread, a class of
    # another module: not shown, silent)
    imported = EVALUATE_HELPER.replace("class Seq2Seq(nn.Module):", "from modules import Seq2Seq\nclass Unused(nn.Module):")
    assert lines(imported, "TL702") == []
    without = EVALUATE_HELPER.replace("nn.Dropout(0.1)", "nn.Identity()")
    assert lines(without, "TL702") == []


# in the shape of ermongroup/ncsn's anneal_runner.py (ermongroup/ncsn#2): the loss helper gets the model
NCSN = """
import torch
from losses import dsm_loss

score = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3), torch.nn.BatchNorm2d(64), torch.nn.Conv2d(64, 3, 3))
optimizer = torch.optim.Adam(score.parameters(), lr=0.001)
step = 0
for epoch in range(100):
    for X, y in dataloader:
        step += 1
        loss = dsm_loss(score, X)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            score.eval()
            with torch.no_grad():
                test_loss = dsm_loss(score, next(test_iter)[0])
"""


def test_tl702_periodic_eval_when_a_loss_helper_runs_the_model():
    assert lines(NCSN, "TL702") == [line_of(NCSN, "score.eval()")]
    fixed = NCSN.replace("test_loss = dsm_loss(score, next(test_iter)[0])",
                         "test_loss = dsm_loss(score, next(test_iter)[0])\n            score.train()")
    assert lines(fixed, "TL702") == []
    # the helper gets something else (the data only): the loop does not train `score` through it
    unrelated = NCSN.replace("loss = dsm_loss(score, X)", "loss = dsm_loss(other, X)")
    assert lines(unrelated, "TL702") == []
    # the model of the thread, from another module: whether it has a batch norm is not shown
    imported = NCSN.replace("score = torch.nn.Sequential(", "from models import RefineNet\nscore = RefineNet(")
    assert lines(imported, "TL702") == []


# in the shape of pliang279/MultiBench's Supervised_Learning.py (pliang279/MultiBench#26)
MULTIBENCH = """
import torch
from torch import nn

def train(encoders, fusion, head, train_dataloader, valid_dataloader, total_epochs):
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), head)
    op = torch.optim.RMSprop(model.parameters(), lr=0.001)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(total_epochs):
        model.train()
        for j in train_dataloader:
            op.zero_grad()
            loss = criterion(model(j[0]), j[-1])
            loss.backward()
            op.step()
        model.eval()
        with torch.no_grad():
            total = 0.0
            for j in valid_dataloader:
                model.train()
                out = model(j[0])
                total += criterion(out, j[-1]).item()
"""


def test_tl702_train_called_inside_the_evaluation_loop():
    [f] = lint(MULTIBENCH, "TL702")
    assert f.start.row == line_of(MULTIBENCH, "out = model(j[0])")
    assert "`model.train()` runs inside this evaluation loop" in f.message
    fixed = MULTIBENCH.replace("                model.train()\n", "")
    assert lines(fixed, "TL702") == []
    # a Sequential of layers made right there without a mode (linear, relu): nothing to report
    mode_free = MULTIBENCH.replace("nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), head)",
                                   "nn.Sequential(nn.Linear(4, 4), nn.ReLU())")
    assert lines(mode_free, "TL702") == []
    # the encoders handed in, as in the thread: whether they have a dropout is not shown
    given = MULTIBENCH.replace("nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), head)", "nn.Sequential(*encoders, fusion, head)")
    assert lines(given, "TL702") == []


# in the shape of wolny/pytorch-3dunet's trainer (wolny/pytorch-3dunet#53)
TRAINER_CLASS = """
import torch

def main(loaders):
    net = torch.nn.Sequential(torch.nn.Conv3d(1, 8, 3), torch.nn.BatchNorm3d(8), torch.nn.Conv3d(8, 2, 1))
    Trainer(net, torch.optim.Adam(net.parameters()), torch.nn.CrossEntropyLoss(), loaders).fit(10)

class Trainer:
    def __init__(self, model, optimizer, loss_criterion, loaders, validate_after_iters=100):
        self.model = model
        self.optimizer = optimizer
        self.loss_criterion = loss_criterion
        self.loaders = loaders
        self.validate_after_iters = validate_after_iters
        self.num_iterations = 1

    def fit(self, epochs):
        for _ in range(epochs):
            self.train(self.loaders["train"])

    def train(self, train_loader):
        self.model.train()
        for input, target in train_loader:
            output, loss = self._forward_pass(input, target)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.num_iterations % self.validate_after_iters == 0:
                print(self.validate(self.loaders["val"]))
            self.num_iterations += 1

    def validate(self, val_loader):
        losses = []
        with torch.no_grad():
            for input, target in val_loader:
                output, loss = self._forward_pass(input, target)
                losses.append(loss.item())
        return sum(losses) / len(losses)

    def _forward_pass(self, input, target):
        output = self.model(input)
        return output, self.loss_criterion(output, target)
"""


def test_tl702_trainer_class_whose_validate_never_calls_eval():
    [f] = lint(TRAINER_CLASS, "TL702")
    in_validate = [i for i, line in enumerate(textwrap.dedent(TRAINER_CLASS).splitlines(), 1)
                   if "self._forward_pass(input, target)" in line][1]
    assert f.start.row == in_validate
    assert "`validate()` evaluates `self.model`" in f.message
    # the fix of the thread: eval() in validate(), train() again after it
    fixed = TRAINER_CLASS.replace("        losses = []\n", "        self.model.eval()\n        losses = []\n").replace(
        "        return sum(losses) / len(losses)", "        self.model.train()\n        return sum(losses) / len(losses)")
    assert lines(fixed, "TL702") == []
    # eval() through a helper method of the class counts too
    helper = TRAINER_CLASS.replace("        losses = []\n", "        self._eval_mode()\n        losses = []\n") + """
    def _eval_mode(self):
        self.model.eval()
"""
    assert all("evaluates" not in f.message for f in lint(helper, "TL702"))
    # ... but then validate() leaves the model in eval mode for the rest of the pass: `train()` runs once,
    # before the loop (the form of wkentaro/pytorch-fcn#56)
    assert lines(helper, "TL702") == [line_of(helper, "print(self.validate(")]
    # validate() is called after a method that put the model in eval mode
    called_after_eval = TRAINER_CLASS.replace("print(self.validate(", "self.model.eval()\n                print(self.validate(")
    assert all("`validate()` evaluates" not in f.message for f in lint(called_after_eval, "TL702"))


# -- TL403: the model behind a parameter, a softmax inside log_softmax -------------------------------

# in the shape of jindongwang/Deep-learning-activity-recognition's pytorch CNN
# (jindongwang/Deep-learning-activity-recognition#10)
HAR = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(128, 500)
        self.fc2 = nn.Linear(500, 6)

    def forward(self, x):
        out = self.fc1(x)
        out = self.fc2(out)
        out = F.softmax(out, dim=1)
        return out

def train(model, optimizer, train_loader):
    criterion = nn.CrossEntropyLoss()
    for e in range(100):
        for sample, target in train_loader:
            output = model(sample)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

model = Network()
optimizer = torch.optim.SGD(params=model.parameters(), lr=0.01)
"""


def test_tl403_softmax_at_the_end_of_forward_of_a_model_handed_to_train():
    assert lines(HAR, "TL403") == [line_of(HAR, "out = F.softmax(out, dim=1)")]
    # the same through the call of train() that the script makes
    called = HAR + "train(model, optimizer, loader)\n"
    assert lines(called, "TL403") == [line_of(HAR, "out = F.softmax(out, dim=1)")]
    # the author's fix: forward returns the logits
    fixed = HAR.replace("        out = F.softmax(out, dim=1)\n", "")
    assert lines(fixed, "TL403") == [] and lines(fixed + "train(model, optimizer, loader)\n", "TL403") == []
    # train() is given another model, whose forward returns logits
    other = HAR.replace("model = Network()", "class Logits(nn.Module):\n    def forward(self, x):\n        return x\n\n"
                        "model = Network()") + "train(Logits(), optimizer, loader)\n"
    assert lines(other, "TL403") == []
    # two calls with different models: the source cannot tell which one a finding is about
    both = other + "train(model, optimizer, loader)\n"
    assert lines(both, "TL403") == []


# in the shape of Lightning-Universe/lightning-bolts' LogisticRegression (Lightning-Universe/lightning-bolts#654)
BOLTS = """
import torch
from torch import nn
from torch.nn import functional as F

class LogisticRegression(nn.Module):
    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self.linear(x.view(x.size(0), -1))
        loss = F.nll_loss(F.log_softmax(F.softmax(y_hat)), y)
        return loss
"""


def test_tl403_softmax_nested_in_log_softmax():
    [f] = lint(BOLTS, "TL403")
    assert f.start.row == line_of(BOLTS, "F.nll_loss(") and f.message.startswith("softmax output given to `nll_loss`")
    assert "applied twice" in f.message
    assert lines(BOLTS.replace("F.log_softmax(F.softmax(y_hat))", "F.log_softmax(y_hat, dim=1)"), "TL403") == []
    # cross_entropy on the log-softmax of a softmax: twice too; on a log-softmax of the logits: fine
    ce = BOLTS.replace("F.nll_loss(", "F.cross_entropy(")
    assert len(lines(ce, "TL403")) == 1
    assert lines(ce.replace("F.softmax(y_hat)", "y_hat"), "TL403") == []
    # the method spelling
    method = BOLTS.replace("F.log_softmax(F.softmax(y_hat))", "y_hat.softmax(-1).log_softmax(-1)")
    assert len(lines(method, "TL403")) == 1


# -- TL504: the optimizer of the first model, stepped in a function run after the model is rebound ----

# in the shape of spro/practical-pytorch's char-rnn-classification (spro/practical-pytorch#9)
CHAR_RNN = """
import torch
import torch.nn as nn
from model import RNN

rnn = RNN(57, 128, 18)
criterion = nn.NLLLoss()
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.005)

def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()
    optimizer.zero_grad()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    optimizer.step()
    return output, loss.item()

rnn = RNN(57, 128, 18)
for epoch in range(1, 1000):
    category_tensor, line_tensor = random_example()
    output, loss = train(category_tensor, line_tensor)
"""


def test_tl504_optimizer_stepped_in_a_function_called_after_the_model_is_rebound():
    assert lines(CHAR_RNN, "TL504") == [20]  # the second `rnn = RNN(...)`
    # the fix of the repository: one model, the optimizer after it
    fixed = CHAR_RNN.replace("rnn = RNN(57, 128, 18)\nfor", "for")
    assert lines(fixed, "TL504") == []
    # the optimizer rebuilt on the new model before the training calls
    rebuilt = CHAR_RNN.replace("rnn = RNN(57, 128, 18)\nfor", "rnn = RNN(57, 128, 18)\n"
                               "optimizer = torch.optim.SGD(rnn.parameters(), lr=0.005)\nfor")
    assert lines(rebuilt, "TL504") == []
    # the function trains the model it is given, with its own optimizer: the globals play no part
    own = CHAR_RNN.replace("def train(category_tensor, line_tensor):",
                           "def train(category_tensor, line_tensor, rnn=None, optimizer=None):")
    assert lines(own, "TL504") == []


# in the shape of NaJaeMin92/pytorch-DANN (NaJaeMin92/pytorch-DANN#7): the models are built under
# `if __name__ == "__main__":` and handed to the training function; the loss object is moved to the GPU
DANN = """
import torch.nn as nn
import torch.nn.functional as F

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.classifier = nn.Linear(100, 10)

    def forward(self, x):
        return F.softmax(self.classifier(x))

def dann(encoder, classifier, loader, optimizer):
    criterion = nn.CrossEntropyLoss().cuda()
    for image, label in loader:
        optimizer.zero_grad()
        loss = criterion(classifier(encoder(image)), label)
        loss.backward()
        optimizer.step()

if __name__ == "__main__":
    encoder = Extractor().cuda()
    classifier = Classifier().cuda()
    dann(encoder, classifier, loader, optimizer)
"""


def test_tl403_model_built_by_the_caller_and_a_loss_moved_to_the_gpu():
    assert lines(DANN, "TL403") == [line_of(DANN, "return F.softmax(")]
    assert lines(DANN.replace("F.softmax(self.classifier(x))", "self.classifier(x)"), "TL403") == []
    # the softmax model is the encoder, whose output is not what the loss gets
    swapped = DANN.replace("encoder = Extractor().cuda()\n    classifier = Classifier().cuda()",
                           "encoder = Classifier().cuda()\n    classifier = Extractor().cuda()")
    assert lines(swapped, "TL403") == []


# -- TL701: one optimizer of two never cleared ---------------------------------------------------------

# in the shape of Hsintien-Ng/idinvert_pytorch-reproduced's training_loop_encoder.py (Hsintien-Ng/idinvert_pytorch-reproduced#1)
TWO_OPTIMIZERS = """
import torch

optimizer_E = torch.optim.Adam(E.parameters(), lr=1e-4)
optimizer_D = torch.optim.Adam(D.parameters(), lr=1e-4)
for epoch in range(50):
    for x in loader:
        x_rec = G(E(x))
        D_loss = gan_loss(D(x), True) + gan_loss(D(x_rec.detach()), False)
        D_loss.backward()
        optimizer_D.step()
        E_loss = torch.mean((x - x_rec) ** 2) + gan_loss(D(x_rec), True)
        optimizer_E.zero_grad()
        E_loss.backward()
        optimizer_E.step()
"""


def test_tl701_second_optimizer_never_cleared():
    [f] = lint(TWO_OPTIMIZERS, "TL701")
    assert f.start.row == line_of(TWO_OPTIMIZERS, "optimizer_D.step()")
    assert "`optimizer_D`'s gradients" in f.message
    # the author's fix
    fixed = TWO_OPTIMIZERS.replace("        D_loss.backward()", "        optimizer_D.zero_grad()\n        D_loss.backward()")
    assert lines(fixed, "TL701") == []
    # the discriminator's module cleared instead of its optimizer; every gradient set to None
    for clear in ("D.zero_grad()", "E.zero_grad(set_to_none=True)", "x.grad = None"):
        other = TWO_OPTIMIZERS.replace("        D_loss.backward()", f"        {clear}\n        D_loss.backward()")
        assert lines(other, "TL701") == [], clear


# in the shape of yunjey/pytorch-tutorial's tutorials/03-advanced/generative_adversarial_network/main.py
RESET_GRAD_HELPER = """
import torch

d_optimizer = torch.optim.Adam(D.parameters(), lr=0.0002)
g_optimizer = torch.optim.Adam(G.parameters(), lr=0.0002)

def reset_grad():
    d_optimizer.zero_grad()
    g_optimizer.zero_grad()

for epoch in range(200):
    for images, _ in data_loader:
        d_loss = criterion(D(images), real_labels) + criterion(D(G(z)), fake_labels)
        reset_grad()
        d_loss.backward()
        d_optimizer.step()
        g_loss = criterion(D(G(z)), real_labels)
        reset_grad()
        g_loss.backward()
        g_optimizer.step()
"""


def test_tl701_zero_grad_in_a_helper_the_loop_calls():
    assert lines(RESET_GRAD_HELPER, "TL701") == []
    # the helper called once before the loop: every step adds to the gradients of the last
    once = RESET_GRAD_HELPER.replace("        reset_grad()\n", "").replace("for epoch", "reset_grad()\nfor epoch")
    assert lines(once, "TL701") == [line_of(once, "d_optimizer.step()")]
    # the helper clears only the generator's optimizer: the discriminator's is never cleared
    only_g = RESET_GRAD_HELPER.replace("    d_optimizer.zero_grad()\n", "")
    [f] = lint(only_g, "TL701")
    assert f.start.row == line_of(only_g, "d_optimizer.step()")
    assert "`d_optimizer`'s gradients (only `g_optimizer.zero_grad()`)" in f.message
    # the optimizer handed to a method of the trainer class, which clears it
    method = """
    import torch

    class GANTrainer:
        def reset(self, opt):
            opt.zero_grad()

        def fit(self, loader):
            for x in loader:
                self.reset(self.d_opt)
                self.d_loss(x).backward()
                self.d_opt.step()
                self.reset(self.g_opt)
                self.g_loss(x).backward()
                self.g_opt.step()
    """
    assert lines(method, "TL701") == []
    wrong = method.replace("self.reset(self.d_opt)", "self.reset(self.g_opt)")
    assert lines(wrong, "TL701") == [line_of(wrong, "self.d_opt.step()")]


# in the shape of the torch version of "Deep Learning with Python" chapter 7's CustomModel
# (fchollet/deep-learning-with-python-notebooks#293)
KERAS_TORCH_TRAIN_STEP = """
import os
os.environ["KERAS_BACKEND"] = "torch"
import keras
import torch

loss_fn = keras.losses.SparseCategoricalCrossentropy()

class CustomModel(keras.Model):
    def train_step(self, data):
        inputs, targets = data
        loss = loss_fn(targets, self(inputs, training=True))
        loss.backward()
        trainable_weights = [v for v in self.trainable_weights]
        gradients = [v.value.grad for v in trainable_weights]
        with torch.no_grad():
            self.optimizer.apply(gradients, trainable_weights)
        return {"loss": loss}
"""


def test_tl701_keras_train_step_on_torch_never_clears_the_gradients():
    assert lines(KERAS_TORCH_TRAIN_STEP, "TL701") == [line_of(KERAS_TORCH_TRAIN_STEP, "self.optimizer.apply(")]
    # Keras' guide: self.zero_grad() first
    fixed = KERAS_TORCH_TRAIN_STEP.replace("        inputs, targets = data\n",
                                           "        inputs, targets = data\n        self.zero_grad()\n")
    assert lines(fixed, "TL701") == []
    # a TensorFlow train_step (GradientTape, no backward()) has nothing to clear
    tf_step = KERAS_TORCH_TRAIN_STEP.replace("loss.backward()", "pass").replace("torch.no_grad()", "tape")
    assert lines(tf_step, "TL701") == []


# -- TL703: the backpropagated output kept in a list ---------------------------------------------------

# in the shape of TRI-ML/packnet-sfm's horovod trainer (TRI-ML/packnet-sfm#51)
KEPT_OUTPUTS = """
import torch

def train(dataloader, module, optimizer):
    module.train()
    outputs = []
    for i, batch in enumerate(dataloader):
        optimizer.zero_grad()
        output = module.training_step(batch, i)
        output["loss"].backward()
        optimizer.step()
        outputs.append(output)
    return module.training_epoch_end(outputs)
"""


def test_tl703_backpropagated_output_appended_to_a_list():
    assert lines(KEPT_OUTPUTS, "TL703") == [line_of(KEPT_OUTPUTS, "outputs.append(output)")]
    # the merged fix: detach the loss before appending
    fixed = KEPT_OUTPUTS.replace("        outputs.append(output)",
                                 "        output['loss'] = output['loss'].detach()\n        outputs.append(output)")
    assert lines(fixed, "TL703") == []
    # a list made in each iteration does not outlive it; losses kept for one later backward() are intended
    assert lines(KEPT_OUTPUTS.replace("        outputs.append(output)", "        outputs = []\n        outputs.append(output)"),
                 "TL703") == []
    later = KEPT_OUTPUTS.replace("    return module", "    torch.stack(outputs).sum().backward()\n    return module")
    assert lines(later, "TL703") == []
    # the value appended is not what was backpropagated
    assert lines(KEPT_OUTPUTS.replace("outputs.append(output)", "outputs.append(metrics)"), "TL703") == []


# -- TL403: a Sequential filled by add_module in a builder, a loss called through .forward -------

# in the shape of vinhkhuc/PyTorch-Mini-Tutorials' 3_neural_net.py (vinhkhuc/PyTorch-Mini-Tutorials#1)
ADD_MODULE_BUILDER = """
import torch

def build_model(input_dim, output_dim):
    model = torch.nn.Sequential()
    model.add_module("linear_1", torch.nn.Linear(input_dim, 512, bias=False))
    model.add_module("sigmoid_1", torch.nn.Sigmoid())
    model.add_module("linear_2", torch.nn.Linear(512, output_dim, bias=False))
    model.add_module("softmax", torch.nn.Softmax())
    return model

def train(model, loss, optimizer, x, y):
    optimizer.zero_grad()
    fx = model.forward(x)
    output = loss.forward(fx, y)
    output.backward()
    optimizer.step()
    return output.item()

def main(trX, trY):
    model = build_model(784, 10)
    loss = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(100):
        train(model, loss, optimizer, trX, trY)
"""


def test_tl403_softmax_added_last_to_a_sequential_built_by_a_helper():
    assert lines(ADD_MODULE_BUILDER, "TL403") == [line_of(ADD_MODULE_BUILDER, '"softmax", torch.nn.Softmax()')]


def test_tl403_add_module_forms_that_end_in_logits_or_feed_another_loss():
    fixed = ADD_MODULE_BUILDER.replace('    model.add_module("softmax", torch.nn.Softmax())\n', "")
    assert lines(fixed, "TL403") == []
    mse = ADD_MODULE_BUILDER.replace("torch.nn.CrossEntropyLoss()", "torch.nn.MSELoss()")
    assert lines(mse, "TL403") == []
    # the softmax is added to another Sequential than the one returned
    other = ADD_MODULE_BUILDER.replace('model.add_module("softmax"', 'head = torch.nn.Sequential()\n    head.add_module("softmax"')
    assert lines(other, "TL403") == []


# in the shape of IBM/dstc7-noesis's SupervisedTrainer (IBM/dstc-noesis#18), with the model class beside it
DEFAULT_LOSS_ARGUMENT = """
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss

class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 10)
        self.final_layer = nn.Softmax(dim=-1)

    def forward(self, x):
        return self.final_layer(self.proj(x))

class SupervisedTrainer:
    def __init__(self, loss_func=CrossEntropyLoss(), batch_size=64):
        self.loss_func = loss_func
        self.batch_size = batch_size

    def _train_batch(self, x, target, model, optimizer):
        loss_func = self.loss_func
        outputs = model(x)
        loss = loss_func(outputs, target)
        model.zero_grad()
        loss.backward()
        optimizer.step()

model = Scorer(16)
optimizer = torch.optim.Adam(model.parameters())
SupervisedTrainer()._train_batch(x, y, model, optimizer)
"""


def test_tl403_a_loss_given_as_a_constructor_default_and_kept_on_self():
    assert lines(DEFAULT_LOSS_ARGUMENT, "TL403") == [line_of(DEFAULT_LOSS_ARGUMENT, "return self.final_layer(")]
    nll = DEFAULT_LOSS_ARGUMENT.replace("loss_func=CrossEntropyLoss()", "loss_func=nn.MSELoss()")
    assert lines(nll, "TL403") == []
