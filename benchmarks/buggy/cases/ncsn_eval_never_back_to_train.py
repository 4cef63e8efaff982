# A score-based generative model's annealed training runner: every 100 steps it logs the denoising
# loss on a test batch after score.eval(), and never puts the model back in training mode.
# evidence: ermongroup/ncsn#2 ("Model in eval forever after the first log on validation": the model is
# put in eval() in anneal_runner.py and never put in train() again; fixed by the author)
import torch
import torch.optim as optim
from torch.utils.data import DataLoader
from torchvision.datasets import CIFAR10
import torchvision.transforms as transforms

from models.cond_refinenet_dilated import CondRefineNetDilated
from losses.dsm import anneal_dsm_score_estimation

dataset = CIFAR10("run/datasets/cifar10", train=True, download=True, transform=transforms.ToTensor())
test_dataset = CIFAR10("run/datasets/cifar10_test", train=False, download=True, transform=transforms.ToTensor())
dataloader = DataLoader(dataset, batch_size=128, shuffle=True, num_workers=4)
test_loader = DataLoader(test_dataset, batch_size=128, shuffle=True, num_workers=4, drop_last=True)
test_iter = iter(test_loader)

score = CondRefineNetDilated(ngf=128, num_classes=10)
optimizer = optim.Adam(score.parameters(), lr=0.001)
sigmas = torch.exp(torch.linspace(0.0, -4.6, 10))
step = 0

for epoch in range(500000):
    for i, (X, y) in enumerate(dataloader):
        step += 1
        X = X / 256.0 * 255.0 + torch.rand_like(X) / 256.0
        labels = torch.randint(0, len(sigmas), (X.shape[0],))
        loss = anneal_dsm_score_estimation(score, X, labels, sigmas, 2.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        if step % 100 == 0:
            score.eval()  # BUG TL702: eval() in the training loop and no train() before the next training step: training continues in eval mode
            test_X, test_y = next(test_iter)
            test_X = test_X / 256.0 * 255.0 + torch.rand_like(test_X) / 256.0
            test_labels = torch.randint(0, len(sigmas), (test_X.shape[0],))
            with torch.no_grad():
                test_dsm_loss = anneal_dsm_score_estimation(score, test_X, test_labels, sigmas, 2.0)
