"""The pytorch/examples MNIST network on 8x8 digits-like data: two convolutions, max pooling,
log-softmax with NLL loss, Adadelta with StepLR, a DataLoader over a TensorDataset."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, dropout=(0.25, 0.5)):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout1 = nn.Dropout(dropout[0])
        self.dropout2 = nn.Dropout(dropout[1])
        self.fc1 = nn.Linear(32 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def make_model():
    torch.manual_seed(0)
    return Net(dropout=(0.0, 0.0))  # dropout off: both runs must draw the same masks


def make_data():
    rng = np.random.default_rng(8)
    x = rng.random((256, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, size=256)
    x = (x - 0.1307) / 0.3081
    return TensorDataset(torch.from_numpy(x), torch.from_numpy(y))


def train(model, data, steps):
    loader = DataLoader(data, batch_size=32, shuffle=False)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=4, gamma=0.7)
    model.train()
    losses = []
    while len(losses) < steps:
        for batch_idx, (inputs, target) in enumerate(loader):
            optimizer.zero_grad()
            output = model(inputs)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if batch_idx % 4 == 3:
                scheduler.step()
            if len(losses) == steps:
                break
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 10))
