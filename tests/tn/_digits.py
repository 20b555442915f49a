"""The digits training run the classifier tests share: a seeded 1400 / 397 split of the bundled
8x8 digits, Adam, and the held-out accuracy."""

import tensorix as tx
from tensorix import nn, optim


def train_on_digits(make_model, epochs, lr, batch):
    """Train ``make_model(generator)`` on 1400 digits; returns the held-out accuracy."""
    from tensorix.data import load_digits

    images, labels = load_digits()
    x = images.reshape(len(labels), -1)
    gen = tx.Generator().manual_seed(0)
    perm = tx.randperm(len(labels), generator=gen)
    train, test = perm[:1400], perm[1400:]
    model = make_model(gen)
    opt = optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        order = tx.randperm(len(train), generator=gen)
        for k in range(0, len(train), batch):
            idx = train[order[k:k + batch]]
            loss = nn.functional.cross_entropy(model(x[idx]), labels[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with tx.no_grad():
        return float((model(x[test]).argmax(1) == labels[test]).float().mean())
