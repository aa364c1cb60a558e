"""A plain PyTorch training script in the shape of pytorch/examples' vae/main.py: the
fully-connected variational autoencoder (784 -> 400 -> 20 + 20, 20 -> 400 -> 784), the
reparameterization trick with `torch.randn_like(std)`, the loss
`F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum') + KLD`, Adam, a DataLoader
over a TensorDataset, and sampling from the prior with `model.decode(torch.randn(64, 20))`.
The images are synthetic 28x28 strokes in [0, 1] instead of MNIST.

tests/ported/test_ported_scripts.py runs it with `import torch` replaced by `import remat as torch`
(the only change); benches/torch_parity.py runs both and compares first-step numbers."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self):
        super().__init__()

        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # https://arxiv.org/abs/1312.6114
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def make_data(n=256, seed=0):
    """(n, 1, 28, 28) images in [0, 1]: a soft horizontal and a soft vertical stroke at random
    places on each, with labels (the stroke's row band) as MNIST's loader yields them."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:28, 0:28]
    rows = rng.integers(4, 24, (n, 1, 1))
    cols = rng.integers(4, 24, (n, 1, 1))
    img = np.maximum(np.exp(-(yy - rows) ** 2 / 2.0), np.exp(-(xx - cols) ** 2 / 2.0))
    images = np.clip(img, 0.0, 1.0).astype(np.float32)[:, None]
    labels = (rows[:, 0, 0] // 4).astype(np.int64)
    return torch.tensor(images), torch.tensor(labels)


def train(epochs=3, seed=0, batch_size=32, lr=1e-3):
    """The average loss per image of each epoch and a batch of 64 samples from the prior."""
    torch.manual_seed(seed)
    train_loader = DataLoader(TensorDataset(*make_data()), batch_size=batch_size, shuffle=True)
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=lr)

    epoch_losses = []
    for _ in range(epochs):
        model.train()
        train_loss = 0
        for data, _ in train_loader:
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        epoch_losses.append(train_loss / len(train_loader.dataset))

    model.eval()
    with torch.no_grad():
        sample = torch.randn(64, 20)
        sample = model.decode(sample).cpu()
    return epoch_losses, sample.view(64, 1, 28, 28).numpy()


if __name__ == "__main__":
    losses, sample = train()
    print("epoch losses " + " ".join(f"{v:.2f}" for v in losses)
          + f"  sample range [{sample.min():.3f}, {sample.max():.3f}]")
