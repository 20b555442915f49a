"""The pytorch/examples word-level Transformer language model: nn.TransformerEncoder with a
square subsequent mask, sinusoidal positional encoding in a buffer, batchify/get_batch, SGD
with StepLR and gradient clipping."""

import math

import numpy as np
import torch
import torch.nn as nn

NTOKEN, NINP, NHEAD, NHID, NLAYERS, BPTT = 50, 32, 2, 64, 2, 12


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.0, max_len=100):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(NINP)
        encoder_layers = nn.TransformerEncoderLayer(NINP, NHEAD, NHID, dropout=0.0)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, NLAYERS,
                                                         enable_nested_tensor=False)
        self.input_emb = nn.Embedding(NTOKEN, NINP)
        self.ninp = NINP
        self.decoder = nn.Linear(NINP, NTOKEN)
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src):
        mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, mask=mask, is_causal=True)
        return torch.log_softmax(self.decoder(output), dim=-1)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def make_model():
    torch.manual_seed(0)
    return TransformerModel()


def make_data():
    rng = np.random.default_rng(9)
    corpus = np.tile(rng.integers(0, NTOKEN, size=41), 30)
    return batchify(torch.tensor(corpus, dtype=torch.long), 10)


def train(model, data, steps):
    criterion = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
    model.train()
    losses = []
    for step in range(steps):
        i = (step * BPTT) % (data.size(0) - BPTT - 1)
        inputs, targets = get_batch(data, i)
        model.zero_grad()
        output = model(inputs)
        loss = criterion(output.view(-1, NTOKEN), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 10))
