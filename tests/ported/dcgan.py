"""A plain PyTorch training script in the shape of pytorch/examples' dcgan/main.py, scaled down
to 16x16 single-channel images: a generator of ConvTranspose2d + BatchNorm2d + ReLU layers
ending in Tanh, a discriminator of Conv2d + BatchNorm2d + LeakyReLU(0.2) layers ending in
Sigmoid, `weights_init` applied through `module.apply`, nn.BCELoss against labels made with
`torch.full` and `fill_`, two Adam optimizers with betas=(0.5, 0.999) and `.detach()` of the
fakes for the discriminator's step. The images are synthetic: bright blobs on a dark ground.
The generator's blocks can be checkpointed (torch.utils.checkpoint).

tests/ported/test_ported_scripts.py runs it with `import torch` replaced by `import remat as torch`
(the only change); benches/torch_parity.py runs both and compares first-step numbers."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

nz = 16  # size of the latent vector
ngf = 8  # generator feature maps
ndf = 8  # discriminator feature maps
nc = 1  # image channels
image_size = 16


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


class Generator(nn.Module):
    def __init__(self, checkpointing=False):
        super().__init__()
        self.checkpointing = checkpointing
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
                nn.BatchNorm2d(ngf * 4),
                nn.ReLU(True)),
            # state size. (ngf*4) x 4 x 4
            nn.Sequential(
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 2),
                nn.ReLU(True)),
            # state size. (ngf*2) x 8 x 8
            nn.Sequential(
                nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
                nn.Tanh()),
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        if not self.checkpointing:
            return self.main(input)
        output = input
        for block in self.main:
            output = checkpoint(block, output, use_reentrant=False)
        return output


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def make_data(n=256, seed=0):
    """Images in [-1, 1] (as the examples' Normalize((0.5,), (0.5,)) gives): one Gaussian blob
    at a random place on each."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:image_size, 0:image_size]
    cy, cx = rng.uniform(4, image_size - 4, (2, n, 1, 1))
    blobs = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
    images = (blobs * 2.0 - 1.0).astype(np.float32)[:, None]
    return torch.tensor(images)


def train(steps=20, seed=0, batch_size=32, lr=2e-4, train_generator=True, checkpointing=False):
    """Per step: the discriminator's loss, the generator's loss, D(x) and D(G(z)) (means over
    the batch), as the example prints them. With ``train_generator=False`` the generator
    stays as initialised and only the discriminator learns."""
    torch.manual_seed(seed)
    dataset = TensorDataset(make_data())
    dataloader = DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)

    netG = Generator(checkpointing=checkpointing)
    netG.apply(weights_init)
    netD = Discriminator()
    netD.apply(weights_init)

    criterion = nn.BCELoss()
    real_label = 1
    fake_label = 0
    optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(0.5, 0.999))

    history = {"errD": [], "errG": [], "D_x": [], "D_G_z": []}
    step = 0
    while step < steps:
        for data in dataloader:
            if step == steps:
                break
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data[0]
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            noise = torch.randn(batch_size, nz, 1, 1)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            if train_generator:
                optimizerG.step()

            history["errD"].append(errD.item())
            history["errG"].append(errG.item())
            history["D_x"].append(D_x)
            history["D_G_z"].append(D_G_z1)
            step += 1
    assert math.isfinite(history["errD"][-1]) and math.isfinite(history["errG"][-1])
    return history


if __name__ == "__main__":
    h = train()
    print(f"Loss_D {h['errD'][0]:.4f} -> {h['errD'][-1]:.4f}  "
          f"Loss_G {h['errG'][0]:.4f} -> {h['errG'][-1]:.4f}  "
          f"D(x) {h['D_x'][-1]:.4f}  D(G(z)) {h['D_G_z'][-1]:.4f}")
    h = train(train_generator=False)
    print(f"fixed generator: Loss_D {h['errD'][0]:.4f} -> {h['errD'][-1]:.4f}  "
          f"D(x) {h['D_x'][-1]:.4f}  D(G(z)) {h['D_G_z'][-1]:.4f}")
