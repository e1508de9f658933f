"""What the live and the static environment share: metadata, rendering the last
observation, and closing the episode recording."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from clinigym.recording import EpisodeRecorder


class ScreenEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    _recorder: EpisodeRecorder | None = None
    _obs_rgb: np.ndarray | None = None

    def _finish_recording(self, outcome: dict) -> None:
        if self._recorder:
            self._recorder.finish(outcome)
            self._recorder = None

    def render(self):
        return None if self._obs_rgb is None else self._obs_rgb.copy()

    def close(self) -> None:
        self._finish_recording({"status": "abandoned"})
        super().close()
