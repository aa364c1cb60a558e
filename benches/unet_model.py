"""A small U-Net (Ronneberger et al. 2015), written once against any library with PyTorch's
``nn`` API, so benchmarks can run the same model in remat and in PyTorch: per level two
3×3 convolutions with ReLU, 2×2 average pooling down, nearest-neighbour upsampling
(``repeat_interleave``) up, and the encoder's features concatenated into the decoder."""

from __future__ import annotations


def unet_class(nn, cat):
    """The ``UNet`` class for the ``nn`` module and ``cat`` function given (remat's or
    PyTorch's)."""
    F = nn.functional

    def block(cin: int, cout: int):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())

    def up(x):
        return x.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)

    class UNet(nn.Module):
        def __init__(self, channels: int = 3, width: int = 32, levels: int = 3) -> None:
            super().__init__()
            widths = [width * 2**i for i in range(levels + 1)]
            self.down = nn.ModuleList(
                [block(channels if i == 0 else widths[i - 1], widths[i]) for i in range(levels)])
            self.bottom = block(widths[levels - 1], widths[levels])
            self.reduce = nn.ModuleList(
                [nn.Conv2d(widths[i + 1], widths[i], 1) for i in range(levels)])
            self.up = nn.ModuleList([block(2 * widths[i], widths[i]) for i in range(levels)])
            self.head = nn.Conv2d(widths[0], channels, 1)

        def forward(self, x):
            skips = []
            for b in self.down:
                x = b(x)
                skips.append(x)
                x = F.avg_pool2d(x, 2)
            x = self.bottom(x)
            for i in reversed(range(len(self.up))):
                x = self.reduce[i](up(x))
                x = self.up[i](cat([x, skips[i]], 1))
            return self.head(x)

    return UNet
