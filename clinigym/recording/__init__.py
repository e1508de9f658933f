"""Episode recordings on disk: `writer` (the one recorder both environments call) and
`reader` (typed records back, for every reader of recordings)."""
from clinigym.recording.reader import Episode, episode_folders, read_episode
from clinigym.recording.writer import EpisodeRecorder, new_episode

__all__ = ["Episode", "EpisodeRecorder", "episode_folders", "new_episode", "read_episode"]
