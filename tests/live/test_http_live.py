"""The HTTP model agent against the OpenAI-compatible test server, over real HTTP on
loopback: every family's prompt, answer and coordinate conversion, and the error paths."""
import pytest

from clinigym.agents.families import FAMILIES
from clinigym.agents.http import HttpAgent
from clinigym.testing.openai_server import TestServer


@pytest.fixture(scope="module")
def ocr_grounder():
    """One grounder for every server: its OCR cache is shared, since a deterministic
    program shows the same screens to every family."""
    from clinigym.testing.openai_server import ocr_grounder
    return ocr_grounder()


@pytest.mark.live
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_end_to_end_on_live_orthanc(name, backends, ocr_grounder, tmp_path):
    from clinigym.envs.steps import StepsEnv
    from clinigym.recording import read_episode
    from clinigym.spec.scenarios import select

    scenario = select("orthanc/open-patient-study")[0]
    with TestServer(name, ocr_grounder) as server:
        env = StepsEnv(scenario, backend=backends("orthanc"), record_dir=tmp_path, agent_name=f"http:{name}")
        agent = HttpAgent(env.agent_context(), family=name, base_url=server.url, model="test")
        obs, info = env.reset(seed=0)
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(agent.act(obs, info))
            done = term or trunc
        env.close()
    episode = read_episode(next(tmp_path.iterdir()))
    assert episode.status == "complete", [s.failure for s in episode.steps]
    assert len(server.requests) == len(scenario.steps)
    for rec in episode.steps:   # raw text, parsed point, prompt and latency recorded per step
        assert rec.agent["family"] == name and rec.agent["raw"] and rec.agent["points"]
        assert rec.agent["latency"] > 0 and rec.agent["prompt"]
