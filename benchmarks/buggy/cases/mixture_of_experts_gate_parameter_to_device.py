# A sparsely-gated mixture-of-experts layer (moe.py) and its CIFAR-10 example: MoE.__init__ takes a `device`
# argument and creates its gating weights as `nn.Parameter(...).to(self.device)`, which returns a plain
# tensor: w_gate and w_noise are not registered, the optimizer built from net.parameters() never sees them,
# and the gates are never learned.
# evidence: davidmrau/mixture-of-experts#12 ("Issue with gates parameters": applying .to(self.device) to an
# nn.Parameter returns a Tensor, "so the weights are not learned during training"; the maintainer asked
# for the pull request), fixed in davidmrau/mixture-of-experts@fd57d7ce6d440cd1882066a8f74c95b4b1aa86f7
# ("removed .to(self.device) in modules")
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.transforms as transforms
from torch.distributions.normal import Normal


class MLP(nn.Module):
    def __init__(self, input_size, output_size, hidden_size):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, output_size)
        self.relu = nn.ReLU()
        self.soft = nn.Softmax(1)

    def forward(self, x):
        return self.soft(self.fc2(self.relu(self.fc1(x))))


class MoE(nn.Module):
    def __init__(self, input_size, output_size, num_experts, hidden_size, noisy_gating=True, k=4, device='cpu'):
        super(MoE, self).__init__()
        self.device = device
        self.noisy_gating = noisy_gating
        self.num_experts = num_experts
        self.k = k
        self.experts = nn.ModuleList([MLP(input_size, output_size, hidden_size) for i in range(num_experts)])
        self.w_gate = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True).to(self.device)  # BUG TL309: .to() returns a plain tensor: the gate weights are not a registered parameter and never train
        self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True).to(self.device)  # BUG TL309: .to() returns a plain tensor: the noise weights are not a registered parameter and never train
        self.softplus = nn.Softplus()
        self.softmax = nn.Softmax(1)
        self.normal = Normal(torch.tensor([0.0]).to(self.device), torch.tensor([1.0]).to(self.device))

    def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2):
        clean_logits = x @ self.w_gate
        if self.noisy_gating and train:
            noise_stddev = self.softplus(x @ self.w_noise) + noise_epsilon
            logits = clean_logits + torch.randn_like(clean_logits).to(self.device) * noise_stddev
        else:
            logits = clean_logits
        top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
        top_k_gates = self.softmax(top_logits[:, :self.k])
        zeros = torch.zeros_like(logits, requires_grad=True).to(self.device)
        return zeros.scatter(1, top_indices[:, :self.k], top_k_gates)

    def forward(self, x, loss_coef=1e-2):
        gates = self.noisy_top_k_gating(x, self.training)
        expert_outputs = torch.stack([expert(x) for expert in self.experts], dim=1)
        y = (gates.unsqueeze(-1) * expert_outputs).sum(dim=1)
        importance = gates.sum(0)
        loss = loss_coef * importance.float().var() / (importance.float().mean() ** 2 + 1e-10)
        return y, loss


transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
trainset = torchvision.datasets.CIFAR10(root='./data', train=True, download=True, transform=transform)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=4, shuffle=True, num_workers=2)

if torch.cuda.is_available():
	device = torch.device('cuda')
else:
	device = torch.device('cpu')

net = MoE(input_size=3072,output_size= 10, num_experts=10, hidden_size=256, noisy_gating=True, k=4, device=device)
net = net.to(device)

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)

net.train()
for epoch in range(1):
    for i, data in enumerate(trainloader, 0):
        inputs, labels = data
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        inputs = inputs.view(inputs.shape[0], -1)
        outputs, aux_loss = net(inputs)
        loss = criterion(outputs, labels)
        total_loss = loss + aux_loss
        total_loss.backward()
        optimizer.step()
