"""Your own agent in a Gymnasium loop, on one Orthanc Explorer scenario.

An agent is any object with a `name`, `reset(seed)` and `act(observation, info)`; it is
built from the environment's public facts (`clinigym.envs.agent_context(env)`: the
observation size, the program, the action types, the mode), never from the environment
itself. Here it clicks the middle of the screen, a baseline: put your model's call in
`act()`. It prints every step (the instruction, the action, the verdict) and then the
episode's result.

    .venv/bin/python examples/own_agent.py

The same agent runs under `clinigym run` (one process, a pool of workers, Ray) through its
factory, `make_agent(context, seed, **options)`, named as module:factory:

    PYTHONPATH=examples clinigym run --agent own_agent:make_agent \
        --scenario orthanc/open-patient-study --out runs/mine
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym

import clinigym  # noqa: F401 - registers the environments (clinigym/<program>-<scenario>-v0)
from clinigym.core.context import AgentContext
from clinigym.envs import agent_context

ENV_ID = "clinigym/orthanc-open-patient-study-v0"


class MiddleClicker:
    """Clicks the middle of the screenshot, whatever the instruction says."""

    name = "middle-clicker"

    def __init__(self, context: AgentContext, seed: int | None = None):
        self.width, self.height = context.observation_size

    def reset(self, seed: int | None = None) -> None:
        pass   # nothing carried from one episode to the next

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        # observation["screenshot"]: the screen (height x width x 3, uint8);
        # observation["instruction"]: what to do now. Points are pixels of the screenshot.
        return f"click({self.width // 2}, {self.height // 2})"


def make_agent(context: AgentContext, seed: int | None = None, **options: Any) -> MiddleClicker:
    """Clicks the middle of the screen (examples/own_agent.py)."""
    return MiddleClicker(context, seed)


def main() -> None:
    env = gym.make(ENV_ID)
    agent = make_agent(agent_context(env), seed=0)
    try:
        observation, info = env.reset(seed=0)
        agent.reset(seed=0)
        total, done = 0.0, False
        while not done:
            action = agent.act(observation, info)
            print(f"step {observation['step']}: {observation['instruction']!r} -> {action}", end="")
            observation, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            print(f": reward {reward}")
            done = terminated or truncated
    finally:
        env.close()
    print(f"episode: {info['end_reason']}; success {info['is_success']}; total reward {total}")


if __name__ == "__main__":
    main()
