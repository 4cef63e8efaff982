# The DSTC7 response-selection baseline (IBM dstc7-noesis): the DualEncoder stores an nn.Softmax() as
# self.final_layer and returns its output, and the SupervisedTrainer, whose loss is a CrossEntropyLoss()
# default argument, feeds that output to the loss in _train_batch. (Encoders, batching and checkpoints
# are shortened; DualEncoder and SupervisedTrainer come from networks/dual_encoder.py and
# trainers/supervised_trainer.py.)
# evidence: IBM/dstc-noesis#18 ("No need to use nn.Softmax layer when using nn.CrossEntropyLoss()"; the
# maintainer: "You are correct. Like you pointed out CrossEntropyLoss already takes care of it. Will fix in
# next release.")
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss
from torch import optim


class DualEncoder(nn.Module):
    def __init__(self, context, response, use_output=False):
        super(DualEncoder, self).__init__()
        self.context = context
        self.response = response
        self.use_output = use_output

        c_h = context.hidden_size
        r_h = response.hidden_size
        if self.context.bidirectional:
            c_h = 2 * c_h
        if self.response.bidirectional:
            r_h = 2 * r_h

        self.M = torch.randn([c_h, r_h], requires_grad=True)
        self.final_layer = nn.Softmax()

    def forward(self, context_var, responses_var, context_lengths_var, responses_lengths_var):
        batch, num_resp, seq_len = responses_var.size()
        c, h_c = self.context(context_var, context_lengths_var)
        r, h_r = self.response(responses_var.reshape([-1, seq_len]), responses_lengths_var.reshape([-1]))

        # unscaled log probabilities
        logits = torch.matmul(torch.matmul(h_c.view(self.context.n_layers, 1, -1), self.M),
                              h_r.view(self.response.n_layers, num_resp, -1).transpose(1, 2)).squeeze()

        output = self.final_layer(logits)  # BUG TL403: (reported where the softmax is taken) probabilities over the responses go into CrossEntropyLoss
        return output


class SupervisedTrainer(object):
    def __init__(self, expt_dir='experiment', loss_func=CrossEntropyLoss(), batch_size=64):
        self.loss_func = loss_func
        self.optimizer = None
        self.expt_dir = expt_dir
        self.batch_size = batch_size

    def _train_batch(self, context_variable, responses_variable, target_variable, model, context_lengths_variable,
                     responses_lengths_variable):
        loss_func = self.loss_func
        outputs = model(context_variable, responses_variable, context_lengths_variable, responses_lengths_variable)
        if len(outputs.size()) == 1:
            outputs = outputs.unsqueeze(0)
        loss = loss_func(outputs, target_variable)
        model.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss

    def train(self, model, data, batch_size=1, num_epochs=5, optimizer=None):
        if optimizer is None:
            optimizer = optim.Adam(model.parameters())
        self.optimizer = optimizer
        for epoch in range(1, num_epochs + 1):
            model.train(True)
            for batch in data.make_batches(batch_size):
                context_variable = torch.tensor(batch[0])
                responses_variable = torch.tensor(batch[1])
                target_variable = torch.tensor(batch[2])
                context_lengths_variable = torch.tensor(batch[3])
                responses_lengths_variable = torch.tensor(batch[4])
                self._train_batch(context_variable, responses_variable, target_variable, model,
                                  context_lengths_variable, responses_lengths_variable)
        return model
