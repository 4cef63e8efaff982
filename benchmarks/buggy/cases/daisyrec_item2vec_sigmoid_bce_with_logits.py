# daisyRec's Item2Vec recommender (daisy/model/Item2VecRecommender.py) and the base class's training loop
# (daisy/model/AbstractRecommender.py): the model's forward ends in `self.out_act = nn.Sigmoid()`, and
# loss_type 'CL' makes the base class build `nn.BCEWithLogitsLoss(reduction='sum')`, which applies its own
# sigmoid: the loss sees sigmoid(sigmoid(x)) and does not converge. (The other loss types, the initialisers
# and the ranking methods are shortened here.)
# evidence: yudi-mars/daisyRec#15 (now AmazingDD/daisyRec#15: "Do not need sigmoid because there is sigmoid
# in BCEWithLogitsLoss. Otherwise loss does not converge."; merged), commit
# AmazingDD/daisyRec@5cce37e09537925f68f9721602cf4e1a3f7e39d8
import torch
import torch.nn as nn
import torch.optim as optim
from tqdm import tqdm


class AbstractRecommender(nn.Module):
    def __init__(self):
        super(AbstractRecommender, self).__init__()
        self.optimizer = None
        self.loss_type = None
        self.lr = 0.01

    def _build_optimizer(self, **kwargs):
        params = self.parameters()
        learner = kwargs.pop('optimizer', self.optimizer)
        learning_rate = kwargs.pop('lr', self.lr)
        if learner.lower() == 'sgd':
            return optim.SGD(params, lr=learning_rate)
        return optim.Adam(params, lr=learning_rate)

    def _build_criterion(self, loss_type):
        if loss_type.upper() == 'CL':
            criterion = nn.BCEWithLogitsLoss(reduction='sum')
        elif loss_type.upper() == 'SL':
            criterion = nn.MSELoss(reduction='sum')
        else:
            raise NotImplementedError(f'Invalid loss type: {self.loss_type}...')
        return criterion


class GeneralRecommender(AbstractRecommender):
    def __init__(self, config):
        super(GeneralRecommender, self).__init__()
        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'

    def fit(self, train_loader):
        self.to(self.device)
        optimizer = self._build_optimizer(optimizer=self.optimizer, lr=self.lr)
        if self.loss_type is not None:
            self.criterion = self._build_criterion(self.loss_type)
        else:
            self.criterion = None
        for epoch in range(1, self.epochs + 1):
            self.train()
            current_loss = 0.
            for batch in tqdm(train_loader):
                self.zero_grad()
                loss = self.calc_loss(batch)
                loss.backward()
                optimizer.step()
                current_loss += loss.item()


class Item2Vec(GeneralRecommender):
    def __init__(self, config):
        super(Item2Vec, self).__init__(config)
        self.user_embedding = nn.Embedding(config['user_num'], config['factors'])
        self.shared_embedding = nn.Embedding(config['item_num'], config['factors'])
        self.lr = config['lr']
        self.epochs = config['epochs']
        self.out_act = nn.Sigmoid()
        # default loss function for item2vec is cross-entropy
        self.loss_type = 'CL'
        self.optimizer = config['optimizer'] if config['optimizer'] != 'default' else 'adam'

    def forward(self, target_i, context_j):
        target_emb = self.shared_embedding(target_i)
        context_emb = self.shared_embedding(context_j)
        output = torch.sum(target_emb * context_emb, dim=1)
        output = self.out_act(output)  # BUG TL403: a sigmoid before BCEWithLogitsLoss, which applies its own
        return output.view(-1)

    def calc_loss(self, batch):
        target_i = batch[0].to(self.device)
        context_j = batch[1].to(self.device)
        label = batch[2].to(self.device).float()
        prediction = self.forward(target_i, context_j)
        loss = self.criterion(prediction, label)
        return loss
