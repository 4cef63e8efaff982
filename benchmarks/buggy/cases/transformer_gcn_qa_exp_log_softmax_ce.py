# A BERT + relational-GCN model for multi-hop question answering (src/models.py, TransformerGCNQA): the
# candidate scores are turned into probabilities with exp(log_softmax(...)) and those probabilities are
# given to nn.CrossEntropyLoss, which applies its own log-softmax (a second, erroneous softmax).
# evidence: bowang-lab/Transformer-GCN-QA#32 ("Removes erroneous extra softmax": "Because we didn't realize
# that CrossEntropyLoss() itself implements a softmax, we had a second, erroneous softmax at the output of
# our model"; the author's fix aca0dc1, merged)
import torch
import torch.nn as nn
from torch_geometric.nn import RGCNConv

from .bert import BERT


class TransformerGCNQA(nn.Module):
    def __init__(self, pretrained_bert_model="bert-base-uncased", dropout_rate=0.2, n_rgcn_layers=3, n_rels=3,
                 rgcn_size=512, n_rgcn_bases=2):
        super().__init__()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.bert = BERT(pretrained_model=pretrained_bert_model)
        self.n_rgcn_layers = n_rgcn_layers
        self.fc_1 = nn.Linear(1536, 786)
        self.fc_2 = nn.Linear(786, rgcn_size)
        self.leaky_relu = nn.LeakyReLU()
        self.dropout = nn.Dropout(dropout_rate)
        self.rgcn_layer = RGCNConv(rgcn_size, rgcn_size, n_rels, n_rgcn_bases)
        self.fc_3 = nn.Linear(rgcn_size + 768, 256)
        self.fc_4 = nn.Linear(256, 128)
        self.fc_5 = nn.Linear(128, 1)
        self.log_softmax = nn.LogSoftmax(dim=0)

    def encode_query_aware_mentions(self, encoded_query, encoded_mentions):
        num_mentions = encoded_mentions.shape[0]
        concat_encodings = torch.cat((encoded_query.expand(num_mentions, -1), encoded_mentions), dim=-1)
        x = self.dropout(self.leaky_relu(self.fc_1(concat_encodings)))
        return self.dropout(self.leaky_relu(self.fc_2(x)))

    def forward(self, query, candidate_indices, encoded_mention, graph, target=None):
        encoded_query, _, _ = self.bert.predict_on_tokens([query.split()])
        x = self.encode_query_aware_mentions(encoded_query, encoded_mention)
        edge_index = graph[[0, 1], :]
        edge_type = graph[2, :]
        rgcn_layers_sum = torch.zeros_like(x)
        for _ in range(self.n_rgcn_layers):
            x = self.rgcn_layer(x, edge_index, edge_type)
            rgcn_layers_sum += x
        x_query_cat = torch.cat([rgcn_layers_sum, encoded_query.expand((len(rgcn_layers_sum), -1))], dim=-1)
        logits = self.dropout(self.fc_3(x_query_cat))
        logits = self.dropout(self.fc_4(logits))
        logits = self.dropout(self.fc_5(logits))

        masked_max = torch.zeros(len(candidate_indices)).to(self.device)
        for i, idxs in enumerate(candidate_indices.values()):
            if idxs:
                masked_max[i] = torch.max(logits[idxs])

        masked_softmax = torch.exp(self.log_softmax(masked_max))  # BUG TL403: probabilities (exp of log-softmax) are given to nn.CrossEntropyLoss below

        if target is not None:
            loss_fct = nn.CrossEntropyLoss()
            class_index = torch.argmax(target, 1)
            loss = loss_fct(masked_softmax.view(-1, len(candidate_indices)), class_index)
            return masked_softmax, loss
        else:
            return masked_softmax
