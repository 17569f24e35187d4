"""The PyTorch DQN tutorial (reinforcement_q_learning.py) on a NumPy CartPole: a Transition namedtuple
and a deque ReplayMemory sampled with Python's random (seeded), a policy and a target network,
epsilon-greedy actions from policy_net(state).max(1).indices.view(1, 1) under no_grad, the batch
built with torch.cat over tuples and a non-final mask from torch.tensor(tuple(map(...)),
dtype=torch.bool), Q(s, a) by gather, V(s') by target_net(...).max(1).values into torch.zeros,
SmoothL1Loss, AdamW(amsgrad=True), clip_grad_value_(100) and the soft target update written over
the state_dicts (target = TAU * policy + (1 - TAU) * target, then load_state_dict). Each "step" is
one optimisation step; its loss is returned."""

import math
import random
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

BATCH_SIZE = 16
GAMMA = 0.99
EPS_START, EPS_END, EPS_DECAY = 0.9, 0.05, 100
TAU = 0.005
LR = 1e-3

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class ReplayMemory:
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        """Save a transition"""
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        return random.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super(DQN, self).__init__()  # noqa: UP008 - as the tutorial writes it
        self.layer1 = nn.Linear(n_observations, 64)
        self.layer2 = nn.Linear(64, 64)
        self.layer3 = nn.Linear(64, n_actions)

    def forward(self, x):
        x = torch.relu(self.layer1(x))
        x = torch.relu(self.layer2(x))
        return self.layer3(x)


class Agent(nn.Module):
    """The two networks in one module, so the harness can copy both."""

    def __init__(self):
        super().__init__()
        self.policy_net = DQN(4, 2)
        self.target_net = DQN(4, 2)
        self.target_net.load_state_dict(self.policy_net.state_dict())


class CartPole:
    """gym's CartPole-v1 dynamics, reset from a seeded NumPy generator; terminates like gym's."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta ** 2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * xacc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.t += 1
        terminated = bool(abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360)
        return self.state.astype(np.float32), 1.0, terminated, self.t >= 200


def get_data():
    return {"seed": 3}


def build():
    return Agent()


def select_action(policy_net, state, steps_done, draw):
    eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
    if draw > eps_threshold:
        with torch.no_grad():
            return policy_net(state).max(1).indices.view(1, 1)
    return torch.tensor([[int(draw * 1000) % 2]], dtype=torch.long)


def optimize_model(memory, policy_net, target_net, optimizer):
    transitions = memory.sample(BATCH_SIZE)
    batch = Transition(*zip(*transitions))
    non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool)
    non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
    state_batch = torch.cat(batch.state)
    action_batch = torch.cat(batch.action)
    reward_batch = torch.cat(batch.reward)
    state_action_values = policy_net(state_batch).gather(1, action_batch)
    next_state_values = torch.zeros(BATCH_SIZE)
    with torch.no_grad():
        next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
    expected_state_action_values = (next_state_values * GAMMA) + reward_batch
    criterion = nn.SmoothL1Loss()
    loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
    optimizer.step()
    return loss.item()


def train(model, data, steps):
    random.seed(0)  # ReplayMemory.sample: the same batches under both libraries
    draws = np.random.default_rng(1)
    policy_net, target_net = model.policy_net, model.target_net
    optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
    memory = ReplayMemory(1000)
    env = CartPole(data["seed"])
    steps_done, losses = 0, []
    state = torch.tensor(env.reset(), dtype=torch.float32).unsqueeze(0)
    while len(losses) < steps:
        action = select_action(policy_net, state, steps_done, draws.random())
        steps_done += 1
        observation, reward, terminated, truncated = env.step(action.item())
        reward = torch.tensor([reward])
        next_state = None if terminated else torch.tensor(observation, dtype=torch.float32).unsqueeze(0)
        memory.push(state, action, next_state, reward)
        state = next_state
        if len(memory) >= BATCH_SIZE:
            losses.append(optimize_model(memory, policy_net, target_net, optimizer))
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
            target_net.load_state_dict(target_net_state_dict)
        if terminated or truncated:
            state = torch.tensor(env.reset(), dtype=torch.float32).unsqueeze(0)
    return losses
