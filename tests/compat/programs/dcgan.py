"""DCGAN (the pytorch/examples recipe at 16x16): transposed-conv generator, conv
discriminator, BatchNorm, weights_init by class name, BCELoss, two Adams with beta1 0.5."""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

NZ, NGF, NDF, NC = 16, 16, 16, 1


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, NGF * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(NGF * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 2, NGF, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NGF),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF, NC, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(NC, NDF, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NDF * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG = Generator()
        self.netD = Discriminator()


def make_model():
    torch.manual_seed(0)
    gan = GAN()
    gan.netG.apply(weights_init)
    gan.netD.apply(weights_init)
    return gan


def make_data():
    rng = np.random.default_rng(5)
    real = np.tanh(rng.standard_normal((256, NC, 16, 16))).astype(np.float32)
    noise = rng.standard_normal((256, NZ, 1, 1)).astype(np.float32)
    return torch.from_numpy(real), torch.from_numpy(noise)


def train(model, data, steps):
    netG, netD = model.netG, model.netD
    real_data, noise_data = data
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real_label, fake_label = 1, 0
    losses = []
    for step in range(steps):
        i = (step * 32) % 256
        real_cpu, noise = real_data[i:i + 32], noise_data[i:i + 32]
        batch_size = real_cpu.size(0)
        # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype)
        errD_real = criterion(netD(real_cpu), label)
        errD_real.backward()
        fake = netG(noise)
        label.fill_(fake_label)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()
        losses.append(errD.item() + errG.item())
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 8))
