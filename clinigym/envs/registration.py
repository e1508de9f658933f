"""Gymnasium registration: `clinigym/<app>-<scenario>-v0` for every scenario file of the
search path (`clinigym.spec.paths`), `clinigym/Scenario-v0`, which takes `scenario=PATH`,
and `clinigym/Static-v0`, the static keyframe mode, which takes `dataset=FOLDER`
(MedSPOT format). Only file names are read here: a scenario is parsed when it is made."""
from __future__ import annotations

import gymnasium as gym

GENERIC_ID = "clinigym/Scenario-v0"
ENTRY = "clinigym.envs.live:LiveEnv"
STATIC_ID = "clinigym/Static-v0"


def register_envs() -> None:
    from clinigym.spec.scenarios import scenario_paths

    # Live programs cannot promise bit-identical steps (info carries wall-clock timings).
    if GENERIC_ID not in gym.registry:
        gym.register(GENERIC_ID, entry_point=ENTRY, nondeterministic=True)
    if STATIC_ID not in gym.registry:
        gym.register(STATIC_ID, entry_point="clinigym.envs.static:StaticEnv")
    for path in scenario_paths():
        env_id = f"clinigym/{path.parent.name}-{path.stem}-v0"
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=ENTRY, kwargs={"scenario": str(path)},
                         nondeterministic=True)
