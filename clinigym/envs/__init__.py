"""The environments: `steps` (a scenario on its live program, each action judged), `goal`
(the plan and goal modes), `static` (MedSPOT keyframes), their shared contract (`base`:
the public info, the agent context, the privileged interface), the observation and action
spaces, the start state, registration.

`LiveEnv` and `make_live` are the 0.x names of `StepsEnv` and `make_env`, kept for one
release (see CHANGELOG.md)."""
from clinigym.envs.base import PUBLIC_INFO, Privileged, agent_context, ground_truth
from clinigym.envs.registration import make_env, register_envs


def __getattr__(name: str):
    # Imported lazily: the steps environment pulls in the display stack.
    if name in ("StepsEnv", "LiveEnv"):
        from clinigym.envs.steps import StepsEnv
        return StepsEnv
    if name == "make_live":
        return make_env
    raise AttributeError(f"module 'clinigym.envs' has no attribute {name!r}")


__all__ = ["PUBLIC_INFO", "Privileged", "StepsEnv", "agent_context", "ground_truth", "make_env", "register_envs"]
