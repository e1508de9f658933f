"""The environments: `live` (a scenario on its live program), `static` (MedSPOT keyframes),
their shared contract (`base`: the public info, the agent context, the privileged
interface), the observation and action spaces, the start state, registration."""
from clinigym.envs.base import PUBLIC_INFO, Privileged, ground_truth
from clinigym.envs.registration import register_envs

__all__ = ["PUBLIC_INFO", "Privileged", "ground_truth", "register_envs"]
