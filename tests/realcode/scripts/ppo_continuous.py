# ruff: noqa: N806, B008 - CleanRL's names and its layer_init(std=np.sqrt(2)) default
"""CleanRL's ppo_continuous_action.py on a vectorised NumPy point-mass task: an Agent with separate
tanh critic/actor MLPs (orthogonal init, std sqrt(2) / 0.01), a state-independent actor_logstd
Parameter, Independent(Normal(mean, std), 1) for the action distribution, GAE computed backwards
with tensor ops, advantage normalisation, the clipped surrogate with approx_kl, a clipped value
loss, an entropy bonus, clip_grad_norm_, Adam with eps=1e-5 and a linearly annealed lr set by hand.
Each "step" is one minibatch update; its total loss is returned."""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions import Independent, Normal

NUM_ENVS, NUM_STEPS, OBS, ACT = 4, 16, 4, 2
GAMMA, GAE_LAMBDA, CLIP_COEF, ENT_COEF, VF_COEF = 0.99, 0.95, 0.2, 0.01, 0.5


class PointMass:
    """NUM_ENVS 2-d point masses pushed towards a target; reward = -distance, episodes of 8 steps."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.pos = self.rng.uniform(-1, 1, (NUM_ENVS, 2))
        self.target = self.rng.uniform(-1, 1, (NUM_ENVS, 2))
        self.t = np.zeros(NUM_ENVS, dtype=np.int64)

    def obs(self):
        return np.concatenate([self.pos, self.target - self.pos], 1).astype(np.float32)

    def step(self, action):
        self.pos = self.pos + 0.1 * np.clip(action, -1, 1)
        reward = -np.linalg.norm(self.target - self.pos, axis=1)
        self.t += 1
        done = self.t >= 8
        self.pos[done] = self.rng.uniform(-1, 1, (int(done.sum()), 2))
        self.t[done] = 0
        return self.obs(), reward.astype(np.float32), done.astype(np.float32)


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(OBS, 32)), nn.Tanh(),
                                    layer_init(nn.Linear(32, 32)), nn.Tanh(),
                                    layer_init(nn.Linear(32, 1), std=1.0))
        self.actor_mean = nn.Sequential(layer_init(nn.Linear(OBS, 32)), nn.Tanh(),
                                        layer_init(nn.Linear(32, 32)), nn.Tanh(),
                                        layer_init(nn.Linear(32, ACT), std=0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, ACT))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        action_std = torch.exp(action_logstd)
        probs = Independent(Normal(action_mean, action_std), 1)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def get_data():
    return {"seed": 7}


def build():
    return Agent()


def rollout(agent, envs, next_obs, next_done):
    obs = torch.zeros((NUM_STEPS, NUM_ENVS, OBS))
    actions = torch.zeros((NUM_STEPS, NUM_ENVS, ACT))
    logprobs, rewards, dones, values = (torch.zeros((NUM_STEPS, NUM_ENVS)) for _ in range(4))
    for step in range(NUM_STEPS):
        obs[step] = next_obs
        dones[step] = next_done
        with torch.no_grad():
            action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
        actions[step] = action
        logprobs[step] = logprob
        o, r, d = envs.step(action.cpu().numpy())
        rewards[step] = torch.tensor(r).view(-1)
        next_obs, next_done = torch.Tensor(o), torch.Tensor(d)
    with torch.no_grad():
        next_value = agent.get_value(next_obs).reshape(1, -1)
        advantages = torch.zeros_like(rewards)
        lastgaelam = 0
        for t in reversed(range(NUM_STEPS)):
            if t == NUM_STEPS - 1:
                nextnonterminal = 1.0 - next_done
                nextvalues = next_value
            else:
                nextnonterminal = 1.0 - dones[t + 1]
                nextvalues = values[t + 1]
            delta = rewards[t] + GAMMA * nextvalues * nextnonterminal - values[t]
            advantages[t] = lastgaelam = delta + GAMMA * GAE_LAMBDA * nextnonterminal * lastgaelam
        returns = advantages + values
    batch = (obs.reshape((-1, OBS)), logprobs.reshape(-1), actions.reshape((-1, ACT)),
             advantages.reshape(-1), returns.reshape(-1), values.reshape(-1))
    return batch, next_obs, next_done


def train(agent, data, steps):
    envs = PointMass(data["seed"])
    lr, minibatch, update_epochs = 3e-3, 16, 2
    optimizer = optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    next_obs, next_done = torch.Tensor(envs.obs()), torch.zeros(NUM_ENVS)
    batch_size = NUM_ENVS * NUM_STEPS
    num_iterations = max(1, -(-steps // (update_epochs * batch_size // minibatch)))
    losses, clipfracs = [], []
    for iteration in range(1, num_iterations + 1):
        optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * lr
        (b_obs, b_logprobs, b_actions, b_adv, b_returns, b_values), next_obs, next_done = rollout(
            agent, envs, next_obs, next_done)
        for _epoch in range(update_epochs):
            b_inds = torch.randperm(batch_size)
            for start in range(0, batch_size, minibatch):
                mb = b_inds[start:start + minibatch]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > CLIP_COEF).float().mean().item()]
                mb_adv = b_adv[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss1 = -mb_adv * ratio
                pg_loss2 = -mb_adv * torch.clamp(ratio, 1 - CLIP_COEF, 1 + CLIP_COEF)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb]) ** 2
                v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -CLIP_COEF, CLIP_COEF)
                v_loss_clipped = (v_clipped - b_returns[mb]) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                loss = pg_loss - ENT_COEF * entropy.mean() + v_loss * VF_COEF
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
                losses.append(loss.item())
                assert approx_kl.item() > -1e-6
                if len(losses) == steps:
                    assert all(0.0 <= c <= 1.0 for c in clipfracs)
                    return losses
    return losses
