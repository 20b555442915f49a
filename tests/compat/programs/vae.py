"""A variational autoencoder (the pytorch/examples MLP VAE) on binary 8x8 images: the
reparameterisation trick, BCE + KL loss summed over the batch, Adam."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 48)
        self.fc21 = nn.Linear(48, 8)
        self.fc22 = nn.Linear(48, 8)
        self.fc3 = nn.Linear(8, 48)
        self.fc4 = nn.Linear(48, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def make_model():
    torch.manual_seed(0)
    return VAE()


def make_data():
    rng = np.random.default_rng(2)
    images = (rng.random((512, 1, 8, 8)) < 0.3).astype(np.float32)
    noise = rng.standard_normal((512, 8)).astype(np.float32)  # eps for each sample
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(noise))


def train(model, data, steps):
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(data, batch_size=64, shuffle=False)
    model.train()
    losses = []
    while len(losses) < steps:
        for data_batch, eps in loader:
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data_batch, eps)
            loss = loss_function(recon_batch, data_batch, mu, logvar)
            loss.backward()
            optimizer.step()
            losses.append(loss.item() / len(data_batch))
            if len(losses) == steps:
                break
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 20))
