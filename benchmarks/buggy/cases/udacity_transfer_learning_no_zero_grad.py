# A course's transfer-learning notebook: a pretrained VGG16 with a new classifier layer trained on
# flower images; the training loop never calls optimizer.zero_grad().
# evidence: udacity/deep-learning-v2-pytorch#160 ("Add zero_grad to Transfer Learning notebook": we are
# missing zero_grad in example, which can cause gradients to accumulate)
import torch
import torch.nn as nn
import torch.optim as optim
from torchvision import datasets, models, transforms

data_transform = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
train_data = datasets.ImageFolder("flower_photos/train/", transform=data_transform)
train_loader = torch.utils.data.DataLoader(train_data, batch_size=20, num_workers=0, shuffle=True)

vgg16 = models.vgg16(pretrained=True)
for param in vgg16.features.parameters():
    param.requires_grad = False
vgg16.classifier[6] = nn.Linear(vgg16.classifier[6].in_features, 5)

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(vgg16.classifier.parameters(), lr=0.001)

for epoch in range(1, 3):
    train_loss = 0.0
    for batch_i, (data, target) in enumerate(train_loader):
        output = vgg16(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()  # BUG TL701: no optimizer.zero_grad() in the loop: gradients accumulate
        train_loss += loss.item()
