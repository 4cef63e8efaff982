# A physics-simulation library's PyTorch training notebook (PPO on a brax environment): the losses
# are summed across the training loop as tensors, keeping their autograd history.
# evidence: google/brax#152 ("Remove memory leak in PyTorch training example": total_loss accumulates
# history across the training loop; fix: total_loss += float(loss))
import torch
from torch import optim

from agent import Agent
from env_wrappers import make_env

env = make_env("ant", num_envs=2048)
agent = Agent(policy_layers=[env.observation_space.shape[-1], 64, 64, 16], value_layers=[env.observation_space.shape[-1], 64, 64, 1])
optimizer = optim.Adam(agent.parameters(), lr=3e-4)

total_loss = 0
for update in range(1000):
    observation = env.reset()
    td = agent.rollout(env, observation, unroll_length=5)
    loss = agent.loss(td)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total_loss += loss  # BUG TL703: the loss tensor with its graph is accumulated across the loop
print(total_loss / 1000)
