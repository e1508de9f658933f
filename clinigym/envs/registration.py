"""Gymnasium registration: `clinigym/<app>-<scenario>-v0` (the steps mode) and
`clinigym/<app>-<scenario>-plan-v0` and `-goal-v0` for every scenario file and every task
family file of the search path (`clinigym.spec.paths`; a family's `reset(seed=s)` gives its
instance s), `clinigym/Scenario-v0`, which takes `scenario=PATH`
(and `mode=`),
and `clinigym/Static-v0`, the static keyframe mode, which takes `dataset=FOLDER`
(MedSPOT format). Only file names are read here: a scenario is parsed when it is made."""
from __future__ import annotations

import gymnasium as gym

GENERIC_ID = "clinigym/Scenario-v0"
ENTRY = "clinigym.envs.steps:StepsEnv"
GOAL_ENTRY = "clinigym.envs.goal:GoalEnv"
STATIC_ID = "clinigym/Static-v0"


def make_env(scenario, mode: str = "steps", **kwargs):
    """A live environment of a scenario in a mode (`clinigym.core.context.MODES`)."""
    if mode == "steps":
        from clinigym.envs.steps import StepsEnv
        return StepsEnv(scenario, **kwargs)
    from clinigym.envs.goal import GoalEnv
    return GoalEnv(scenario, mode=mode, **kwargs)


def register_envs() -> None:
    from clinigym.spec.scenarios import scenario_paths
    from clinigym.spec.task_families import family_paths

    # Live programs cannot promise bit-identical steps (info carries wall-clock timings).
    if GENERIC_ID not in gym.registry:
        gym.register(GENERIC_ID, entry_point=make_env, nondeterministic=True)
    if STATIC_ID not in gym.registry:
        gym.register(STATIC_ID, entry_point="clinigym.envs.static:StaticEnv")
    tasks = [(path.parent.name, path) for path in scenario_paths()]
    tasks += [(path.parent.parent.name, path) for path in family_paths()]
    for app, path in tasks:
        for mode, suffix, entry in (("steps", "", ENTRY), ("plan", "-plan", GOAL_ENTRY), ("goal", "-goal", GOAL_ENTRY)):
            env_id = f"clinigym/{app}-{path.stem}{suffix}-v0"
            if env_id not in gym.registry:
                kwargs = {"scenario": str(path)} | ({} if mode == "steps" else {"mode": mode})
                gym.register(env_id, entry_point=entry, kwargs=kwargs, nondeterministic=True)
