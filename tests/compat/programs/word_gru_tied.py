"""The pytorch/examples word-level RNN language model: a 2-layer GRU with tied encoder and
decoder weights, hidden state repackaged between batches, the manual SGD update
`p.data.add_(p.grad, alpha=-lr)`, and learning-rate annealing on a plateau."""

import numpy as np
import torch
import torch.nn as nn

NTOKEN, NINP, NLAYERS, BPTT, BSZ = 60, 32, 2, 10, 6


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.0)
        self.encoder = nn.Embedding(NTOKEN, NINP)
        self.rnn = nn.GRU(NINP, NINP, NLAYERS, dropout=0.0)
        self.decoder = nn.Linear(NINP, NTOKEN)
        self.decoder.weight = self.encoder.weight  # tied weights
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, NTOKEN)
        return torch.nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return weight.new_zeros(NLAYERS, bsz, NINP)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def make_model():
    torch.manual_seed(0)
    return RNNModel()


def make_data():
    rng = np.random.default_rng(11)
    corpus = torch.tensor(np.tile(rng.integers(0, NTOKEN, size=37), 20), dtype=torch.long)
    nbatch = corpus.size(0) // BSZ
    return corpus.narrow(0, 0, nbatch * BSZ).view(BSZ, -1).t().contiguous()


def train(model, data, steps):
    criterion = nn.NLLLoss()
    lr, best = 5.0, None
    hidden = model.init_hidden(BSZ)
    model.train()
    losses = []
    for step in range(steps):
        i = (step * BPTT) % (data.size(0) - BPTT - 1)
        inputs, targets = data[i:i + BPTT], data[i + 1:i + 1 + BPTT].view(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(inputs, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        if best is not None and loss.item() > best:
            lr /= 4.0
        best = loss.item() if best is None else min(best, loss.item())
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 10))
