"""What an agent is built from, besides its own options: never the environment, only these
public facts (`clinigym.agents.make_agent`)."""
from __future__ import annotations

from dataclasses import dataclass

from clinigym.core.actions import ACTION_TYPES

# How a task is given: one instruction per step, each action judged (MedSPOT); the whole
# ordered list of instructions at once (MedCUA's step-level goal); one sentence (its
# intent-level goal). The last two act freely and are judged on the final state.
MODES = ("steps", "plan", "goal")


@dataclass(frozen=True)
class AgentContext:
    observation_size: tuple[int, int]           # (width, height) of the screenshots it will see
    program: str | None = None                  # the program's name (e.g. "orthanc"), None if mixed
    actions: tuple[str, ...] = ACTION_TYPES     # the action types the environment accepts
    mode: str = "steps"                         # how tasks are given: one of MODES
    observation: str = "screenshot"             # what an observation holds: clinigym.envs.observations
