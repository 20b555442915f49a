"""The pytorch/examples time-sequence prediction: two stacked LSTMCells in float64 learning
sine waves, trained with L-BFGS through a closure, then predicting future values."""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 24)
        self.lstm2 = nn.LSTMCell(24, 24)
        self.linear = nn.Linear(24, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 24, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 24, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 24, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 24, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def make_model():
    torch.manual_seed(0)
    return Sequence().double()


def make_data():
    rng = np.random.default_rng(10)
    T, L, N = 20, 40, 8
    x = np.empty((N, L), np.float64)
    x[:] = np.arange(L) + rng.integers(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / T)
    return torch.from_numpy(data[:, :-1]), torch.from_numpy(data[:, 1:])


def train(model, data, steps):
    inputs, target = data
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(model.parameters(), lr=0.8, max_iter=4)
    losses = []
    for _ in range(steps):
        def closure():
            optimizer.zero_grad()
            out = model(inputs)
            loss = criterion(out, target)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
        losses.append(loss.item())
    with torch.no_grad():
        pred = model(inputs[:2], future=5)
        losses.append(criterion(pred[:, :-5], target[:2]).item())
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 4))
