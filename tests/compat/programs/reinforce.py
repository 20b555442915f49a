"""REINFORCE (the pytorch/examples policy-gradient agent) on a small deterministic grid walk:
a Categorical policy, discounted normalised returns, log-probabilities stacked per episode.
Actions are drawn by a NumPy generator from the policy's probabilities, so that both runs
take the same trajectory."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

GAMMA, EPS = 0.99, np.finfo(np.float32).eps.item()


class GridWalk:
    """Walk on 0..9 towards 9; 4 observations, 2 actions (left, right)."""

    def reset(self):
        self.pos = 2
        return self._obs()

    def _obs(self):
        return np.array([self.pos / 9, 1 - self.pos / 9, (self.pos % 2), 1.0], dtype=np.float32)

    def step(self, action):
        self.pos = max(0, min(9, self.pos + (1 if action == 1 else -1)))
        done = self.pos == 9
        return self._obs(), (1.0 if done else -0.1), done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 64)
        self.dropout = nn.Dropout(p=0.0)
        self.affine2 = nn.Linear(64, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.dropout(self.affine1(x)))
        return F.softmax(self.affine2(x), dim=1)


def make_model():
    torch.manual_seed(0)
    return Policy()


def make_data():
    return np.random.default_rng(6)


def select_action(policy, state, rng):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    p = probs.detach().numpy()[0].astype(np.float64)
    action = torch.tensor([rng.choice(2, p=p / p.sum())])
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item(), m.entropy()


def finish_episode(policy, optimizer):
    R, returns = 0, []
    for r in policy.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + EPS)
    policy_loss = [-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns)]
    optimizer.zero_grad()
    loss = torch.cat(policy_loss).sum()
    loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return loss.item()


def train(model, data, steps):
    env, rng = GridWalk(), data
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        state = env.reset()
        for _ in range(30):
            action, _ = select_action(model, state, rng)
            state, reward, done = env.step(action)
            model.rewards.append(reward)
            if done:
                break
        losses.append(finish_episode(model, optimizer))
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 10))
