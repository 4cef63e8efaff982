# Domain-adversarial training (DANN) on MNIST -> MNIST-M, model.py and the dann() loop of train.py in one
# file: the label classifier and the domain discriminator both end their forward() with F.softmax, and
# both outputs go into nn.CrossEntropyLoss. The models are built elsewhere and passed to dann().
# evidence: NaJaeMin92/pytorch-DANN#7 ("The softmax layer makes models hard to train ... remove the last softmax
# layer in Classifier and Discriminator"; the author: "Since LogSoftmax is already included in
# nn.CrossEntropyLoss, it is redundant. Please check the updated code"), fixed in
# NaJaeMin92/pytorch-DANN@a70cf59fce69957751bce1e7c1271382e2dee934
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import params
import utils
from utils import ReverseLayerF, set_model_mode


class Extractor(nn.Module):
    def __init__(self):
        super(Extractor, self).__init__()
        self.extractor = nn.Sequential(
            nn.Conv2d(in_channels=3, out_channels=32, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2),
            nn.Conv2d(in_channels=32, out_channels=48, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2)
        )

    def forward(self, x):
        x = self.extractor(x)
        x = x.view(-1, 3 * 28 * 28)
        return x


class Classifier(nn.Module):
    def __init__(self):
        super(Classifier, self).__init__()
        self.classifier = nn.Sequential(
            nn.Linear(in_features=3 * 28 * 28, out_features=100),
            nn.ReLU(),
            nn.Linear(in_features=100, out_features=100),
            nn.ReLU(),
            nn.Linear(in_features=100, out_features=10)
        )

    def forward(self, x):
        x = self.classifier(x)
        return F.softmax(x)  # BUG TL403: (reported where the softmax is taken) class probabilities go into CrossEntropyLoss


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.discriminator = nn.Sequential(
            nn.Linear(in_features=3 * 28 * 28, out_features=100),
            nn.ReLU(),
            nn.Linear(in_features=100, out_features=2)
        )

    def forward(self, input_feature, alpha):
        reversed_input = ReverseLayerF.apply(input_feature, alpha)
        x = self.discriminator(reversed_input)
        return F.softmax(x)  # BUG TL403: (reported where the softmax is taken) domain probabilities go into CrossEntropyLoss


def dann(encoder, classifier, discriminator, source_train_loader, target_train_loader):
    classifier_criterion = nn.CrossEntropyLoss().cuda()
    discriminator_criterion = nn.CrossEntropyLoss().cuda()

    optimizer = optim.SGD(
        list(encoder.parameters()) +
        list(classifier.parameters()) +
        list(discriminator.parameters()),
        lr=0.01,
        momentum=0.9)

    for epoch in range(params.epochs):
        set_model_mode('train', [encoder, classifier, discriminator])
        start_steps = epoch * len(source_train_loader)
        total_steps = params.epochs * len(target_train_loader)

        for batch_idx, (source_data, target_data) in enumerate(zip(source_train_loader, target_train_loader)):
            source_image, source_label = source_data
            target_image, target_label = target_data

            p = float(batch_idx + start_steps) / total_steps
            alpha = 2. / (1. + np.exp(-10 * p)) - 1

            source_image = torch.cat((source_image, source_image, source_image), 1)
            source_image, source_label = source_image.cuda(), source_label.cuda()
            target_image, target_label = target_image.cuda(), target_label.cuda()
            combined_image = torch.cat((source_image, target_image), 0)

            optimizer = utils.optimizer_scheduler(optimizer=optimizer, p=p)
            optimizer.zero_grad()

            combined_feature = encoder(combined_image)
            source_feature = encoder(source_image)

            class_pred = classifier(source_feature)
            class_loss = classifier_criterion(class_pred, source_label)

            domain_pred = discriminator(combined_feature, alpha)
            domain_source_labels = torch.zeros(source_label.shape[0]).type(torch.LongTensor)
            domain_target_labels = torch.ones(target_label.shape[0]).type(torch.LongTensor)
            domain_combined_label = torch.cat((domain_source_labels, domain_target_labels), 0).cuda()
            domain_loss = discriminator_criterion(domain_pred, domain_combined_label)

            total_loss = class_loss + domain_loss
            total_loss.backward()
            optimizer.step()


if __name__ == "__main__":
    import mnist
    import mnistm

    encoder = Extractor().cuda()
    classifier = Classifier().cuda()
    discriminator = Discriminator().cuda()
    dann(encoder, classifier, discriminator, mnist.mnist_train_loader, mnistm.mnistm_train_loader)
