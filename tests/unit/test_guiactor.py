"""The GUI-Actor agent: the attention-map-to-pixels arithmetic exactly (no torch), and
end to end (slow) with tiny randomly initialised GUI-Actor-shaped checkpoints built
offline: a Qwen2-VL / Qwen2.5-VL model, a byte-level tokenizer with GUI-Actor's
special tokens, and the action head saved beside the model's weights."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from clinigym.agents import AGENTS
from clinigym.agents.guiactor import (
    ASSISTANT_PREFIX,
    SYSTEM_PROMPTS,
    CheckpointError,
    Region,
    build_prompt,
    grid_to_observation,
    patch_centre,
    patch_grid,
    regions,
    top_patches,
)

MAX = 16384 * 28 * 28     # the Qwen2-VL / Qwen2.5-VL checkpoints' max_pixels
MIN = 4 * 28 * 28


# -- the grid: smart_resize / 28 -------------------------------------------------------------

@pytest.mark.parametrize("size, min_pixels, max_pixels, grid", [
    ((1120, 840), MIN, MAX, (30, 40)),             # already multiples of 28: one patch per 28 px
    ((1920, 1080), MIN, MAX, (39, 69)),            # 1080/28 = 38.57 -> 39, 1920/28 = 68.57 -> 69
    ((1920, 1080), MIN, 1280 * 28 * 28, (26, 47)),  # budget: beta = 1.4375, floor(26.8), floor(47.7)
    ((2560, 1440), MIN, 1280 * 28 * 28, (26, 47)),  # same aspect, same budget, same grid
    ((1280, 800), MIN, MAX, (29, 46)),             # 800/28 = 28.57 -> 29, 1280/28 = 45.71 -> 46
    ((3840, 2160), MIN, 3200 * 1800, (64, 114)),   # GUI-Actor's demo budget: beta = 1.2, 1800/28, 3200/28
    ((50, 40), MIN, MAX, (2, 3)),                  # 56x28 is below min_pixels: beta = 1.2522, ceil
])
def test_patch_grid(size, min_pixels, max_pixels, grid):
    assert patch_grid(size, min_pixels, max_pixels) == grid


def test_patch_centre_on_an_exact_grid():
    # 1120x840 is its own smart_resize: patch (row 2, col 3) spans x 84..112, y 56..84.
    grid = (30, 40)
    assert patch_centre(2 * 40 + 3, grid, (1120, 840)) == (98.0, 70.0)
    assert patch_centre(0, grid, (1120, 840)) == (14.0, 14.0)
    assert patch_centre(30 * 40 - 1, grid, (1120, 840)) == (1106.0, 826.0)


def test_patch_centre_through_a_resize():
    # 1920x1080 with the 1280*28*28 budget: the model sees 1316x728 (47x26 patches); a
    # patch centre there maps back per axis, x * 1920/1316 and y * 1080/728.
    grid = (26, 47)
    x, y = patch_centre(5 * 47 + 10, grid, (1920, 1080))
    assert x == pytest.approx(10.5 * 28 * 1920 / 1316, abs=1e-9) and x == pytest.approx(428.936170212766, abs=1e-9)
    assert y == pytest.approx(5.5 * 28 * 1080 / 728, abs=1e-9) and y == pytest.approx(228.46153846153845, abs=1e-9)
    last = patch_centre(26 * 47 - 1, grid, (1920, 1080))
    assert last == pytest.approx((1899.5744680851064, 1059.2307692307693), abs=1e-9)
    assert last[0] <= 1919 and last[1] <= 1079


def test_grid_to_observation():
    assert grid_to_observation(0.0, 0.0, (39, 69), (1920, 1080)) == (0.0, 0.0)
    assert grid_to_observation(69.0, 39.0, (39, 69), (1920, 1080)) == (1920.0, 1080.0)
    assert grid_to_observation(34.5, 19.5, (39, 69), (1920, 1080)) == (960.0, 540.0)


# -- top-K with neighbour suppression ---------------------------------------------------------

def test_top_patches_suppresses_neighbours():
    grid = (4, 5)
    scores = np.zeros(20)
    scores[[6, 7, 12]] = [0.5, 0.4, 0.3]   # a blob around (1,1), (1,2), (2,2)
    scores[19] = 0.2                       # a separate peak at (3,4)
    scores[0] = 0.1                        # (0,0): next to (1,1)
    assert top_patches(scores, grid, 2) == [6, 19]       # 7, 12 and 0 touch 6
    assert top_patches(scores, grid, 3) == [6, 19, 3]    # then the first zero clear of both
    assert top_patches(scores, grid, 5, radius=0) == [6, 7, 12, 19, 0]
    assert top_patches(scores, grid, 2, radius=0) == [6, 7]


def test_top_patches_radius_two_and_ties():
    grid = (1, 8)
    scores = np.array([0.1, 0.3, 0.3, 0.0, 0.2, 0.0, 0.0, 0.3])
    assert top_patches(scores, grid, 8) == [1, 7, 4]             # ties: lower index first
    assert top_patches(scores, grid, 8, radius=2) == [1, 7, 4]   # 4 is 3 cells from 1
    assert top_patches(scores, grid, 8, radius=3) == [1, 7]


# -- GUI-Actor's regions ----------------------------------------------------------------------

def test_regions_rank_by_mean_and_weight_the_centre():
    grid = (3, 4)
    scores = np.zeros(12)
    scores[[0, 1]] = [0.3, 0.1]      # region A: (0,0)-(0,1), mean 0.2
    scores[[10, 11]] = [0.25, 0.25]  # region B: (2,2)-(2,3), mean 0.25
    scores[5] = 0.05                 # below 0.3 x 0.3: dropped
    found = regions(scores, grid)
    assert [r.patches for r in found] == [(10, 11), (0, 1)]
    assert found[0] == Region((10, 11), 0.25, (3.0, 2.5))
    # A: weights 0.75 and 0.25 on centres x = 0.5 and 1.5
    assert found[1].score == pytest.approx(0.2) and found[1].centre == pytest.approx((0.75, 0.5))


def test_regions_connect_four_ways_only():
    grid = (3, 3)
    scores = np.zeros(9)
    scores[[0, 4, 8]] = 1.0          # a diagonal does not connect ...
    scores[1] = 0.5                  # ... but 1 touches both 0 and 4
    found = regions(scores, grid)
    assert [r.patches for r in found] == [(8,), (0, 1, 4)]
    assert found[0].centre == (2.5, 2.5)   # one patch: exactly its centre


def test_one_patch_region_is_exactly_its_patch_centre():
    grid = (26, 47)
    scores = np.full(26 * 47, 1e-6)
    scores[5 * 47 + 10] = 0.9
    best = regions(scores, grid)[0]
    assert best.patches == (5 * 47 + 10,)
    assert grid_to_observation(*best.centre, grid, (1920, 1080)) == patch_centre(5 * 47 + 10, grid, (1920, 1080))


# -- the prompt --------------------------------------------------------------------------------

def test_prompt_as_guiactor_builds_it():
    text = build_prompt("Click on 'Open'.", "qwen2_vl")
    assert text == ("<|im_start|>system\nYou are a GUI agent. You are given a task and a screenshot of the "
                    "screen. You need to perform a series of pyautogui actions to complete the task.<|im_end|>\n"
                    "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Click on 'Open'.<|im_end|>\n"
                    "<|im_start|>assistant<|recipient|>os\n"
                    "pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)")
    text25 = build_prompt("Click on 'Open'.", "qwen2_5_vl")
    assert text25.startswith("<|im_start|>system\nYou are a GUI agent. Given a screenshot of the current GUI")
    assert SYSTEM_PROMPTS["qwen2_5_vl"] in text25 and text25.endswith(ASSISTANT_PREFIX)


def test_registered_and_missing_checkpoint_is_a_clear_error(tmp_path):
    assert "guiactor" in AGENTS
    with pytest.raises(CheckpointError, match="--checkpoint"):
        AGENTS["guiactor"].factory(None, 0)
    missing = tmp_path / "no-such-model"
    with pytest.raises(CheckpointError, match=re.escape(f"{missing} does not exist")):
        AGENTS["guiactor"].factory(None, 0, checkpoint=missing)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="not a GUI-Actor checkpoint: no config.json"):
        AGENTS["guiactor"].factory(None, 0, checkpoint=tmp_path / "empty")


# -- end to end on tiny checkpoints (torch, transformers: `make test-all`) --------------------

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|image_pad|>", "<|video_pad|>", "<|recipient|>", "<|diff_marker|>",
           "<|pointer_start|>", "<|pointer_end|>", "<|pointer_pad|>"]
HIDDEN = 64
BUDGET = 1280 * 28 * 28    # the saved image processor's max_pixels: 1920x1080 -> 26x47 patches


def tiny_checkpoint(path, backbone: str, with_head: bool = True):
    """A GUI-Actor-shaped checkpoint: what GUI-Actor's training saves, in miniature."""
    import torch
    import transformers
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    torch.manual_seed(0)
    # Byte-level BPE without merges: every byte one token, plus the special tokens.
    tokenizer = transformers.Qwen2Tokenizer(vocab={ch: i for i, ch in enumerate(sorted(ByteLevel.alphabet()))},
                                            merges=[])
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL})
    ids = dict(zip(SPECIAL, tokenizer.convert_tokens_to_ids(SPECIAL)))
    text = dict(vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, bos_token_id=ids["<|endoftext|>"],
                eos_token_id=ids["<|im_end|>"], tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0})
    tokens = dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                  vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    if backbone == "qwen2_vl":
        config = transformers.Qwen2VLConfig(
            text_config=text, vision_config=dict(depth=1, embed_dim=32, hidden_size=HIDDEN, num_heads=2, mlp_ratio=2),
            **tokens)
        model = transformers.Qwen2VLForConditionalGeneration._from_config(config)
    else:
        config = transformers.Qwen2_5_VLConfig(
            text_config=text, vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2,
                                                 out_hidden_size=HIDDEN, fullatt_block_indexes=[1]),
            **tokens)
        model = transformers.Qwen2_5_VLForConditionalGeneration._from_config(config)
    if with_head:
        # GUI-Actor's training records the pointer token ids in the config and saves
        # the head as the model's `multi_patch_pointer_head` submodule.
        model.config.pointer_start_token_id = ids["<|pointer_start|>"]
        model.config.pointer_pad_token_id = ids["<|pointer_pad|>"]
        model.config.pointer_end_token_id = ids["<|pointer_end|>"]
        model.config.architectures = [{"qwen2_vl": "Qwen2VLForConditionalGenerationWithPointer",
                                       "qwen2_5_vl": "Qwen2_5_VLForConditionalGenerationWithPointer"}[backbone]]
        mlp = lambda: torch.nn.Sequential(torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.GELU(),  # noqa: E731
                                          torch.nn.Linear(HIDDEN, HIDDEN))
        model.multi_patch_pointer_head = torch.nn.ModuleDict({
            "projection_enc": mlp(), "projection_dec": mlp(),
            "self_attention": torch.nn.MultiheadAttention(HIDDEN, 8, dropout=0.1, batch_first=True),
            "layer_norm": torch.nn.LayerNorm(HIDDEN)})
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    Qwen2VLImageProcessorPil(max_pixels=BUDGET).save_pretrained(path)
    return path


def screenshot(seed: int = 0) -> np.ndarray:
    """A 1920x1080 screen: noise (so that every patch differs) with a few panels."""
    rng = np.random.default_rng(seed)
    rgb = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    rgb[:40] = 230
    rgb[300:360, 800:1100] = (40, 90, 200)
    return rgb


@pytest.mark.slow
@pytest.mark.parametrize("backbone", ["qwen2_vl", "qwen2_5_vl"])
def test_tiny_checkpoint_end_to_end(tmp_path, backbone):
    import torch

    from clinigym.agents.guiactor import GuiActorAgent, load

    load.cache_clear()
    ckpt = tiny_checkpoint(tmp_path / backbone, backbone)
    agent = AGENTS["guiactor"].factory(None, 0, checkpoint=ckpt, top_k=3)
    assert isinstance(agent, GuiActorAgent) and agent.loaded.backbone == backbone
    obs = {"screenshot": screenshot(), "instruction": "Click on 'Open study'.", "step": 0}

    action = agent.act(obs, {})
    assert action.type == "click"
    x, y = action.point
    assert 0 <= x <= 1919 and 0 <= y <= 1079
    meta = action.meta
    assert meta["grid"] == [26, 47] and meta["sent_size"] == [1316, 728] and meta["backbone"] == backbone
    assert np.array(meta["raw"]).shape == (26, 47) and sum(map(sum, meta["raw"])) == pytest.approx(1, abs=1e-3)
    assert len(meta["top_k"]) == 3 and len(meta["regions"]) >= 1 and meta["latency"] > 0
    assert meta["prompt"] == build_prompt("Click on 'Open study'.", backbone)
    assert meta["points"][0] == list(action.point)

    # Steer the head onto one known patch: with the self-attention's output zeroed, the
    # keys are LayerNorm(visual) through projection_enc, made the identity (a bias of
    # +20 keeps the GELU linear); the query is a constant, a large multiple of that
    # patch's normalised embedding. Normalised vectors all have the same length, so
    # the dot product is largest for the patch itself, by far after scaling.
    target = 7 * 47 + 30
    with torch.inference_mode():
        inputs, _ = agent.encode(obs["screenshot"], meta["prompt"])
        vision = agent.loaded.model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"],
                                                             return_dict=True)
        visual = torch.cat(vision.pooler_output)
        head = agent.loaded.head
        head["self_attention"].out_proj.weight.zero_()
        head["self_attention"].out_proj.bias.zero_()
        key = head["layer_norm"](visual)[target]
        eye = torch.eye(HIDDEN)
        first, last = head["projection_enc"][0], head["projection_enc"][2]
        first.weight.copy_(eye)
        first.bias.fill_(20.0)
        last.weight.copy_(eye)
        last.bias.fill_(-20.0)
        head["projection_dec"][2].weight.zero_()
        head["projection_dec"][2].bias.copy_(key * 40.0)
    for rule in ("region", "patch"):
        agent.point = rule
        steered = agent.act(obs, {})
        assert steered.point == patch_centre(target, (26, 47), (1920, 1080))
        assert steered.point == (30.5 / 47 * 1920, 7.5 / 26 * 1080)
        assert steered.meta["top_k"][0]["point"] == list(steered.point)
        assert steered.meta["top_k"][0]["score"] > 0.99


@pytest.mark.slow
def test_wrong_checkpoints_are_clear_errors(tmp_path):
    from safetensors.torch import load_file, save_file

    from clinigym.agents.guiactor import GuiActorAgent, load

    load.cache_clear()
    plain = tiny_checkpoint(tmp_path / "plain", "qwen2_vl", with_head=False)
    problem = f"{plain} is not a GUI-Actor checkpoint: no multi_patch_pointer_head"
    with pytest.raises(CheckpointError, match=re.escape(problem)):
        GuiActorAgent(checkpoint=plain)
    broken = tiny_checkpoint(tmp_path / "broken", "qwen2_vl")
    weights = load_file(broken / "model.safetensors")
    del weights["lm_head.weight"]
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    problem = f"{broken} is not a GUI-Actor checkpoint: weights missing: lm_head"
    with pytest.raises(CheckpointError, match=re.escape(problem)):
        GuiActorAgent(checkpoint=broken)
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(CheckpointError, match=re.escape(f"{other} is not a GUI-Actor checkpoint: model_type 'bert'")):
        GuiActorAgent(checkpoint=other)


@pytest.mark.slow
def test_checkpoint_in_the_transformers_4_layout(tmp_path):
    """GUI-Actor's released checkpoints were saved by transformers 4.x: a flat config
    (the text model's fields at the top, `rope_scaling` of type mrope). Same model,
    same attention."""
    from clinigym.agents.guiactor import GuiActorAgent, load

    load.cache_clear()
    ckpt = tiny_checkpoint(tmp_path / "v5", "qwen2_5_vl")
    obs = screenshot()
    prompt = build_prompt("Click on 'Open study'.", "qwen2_5_vl")
    expected, _ = GuiActorAgent(checkpoint=ckpt).attention(obs, prompt)
    config = json.loads((ckpt / "config.json").read_text())
    text = config.pop("text_config")
    rope = text.pop("rope_parameters")
    text.pop("model_type")
    flat = {**text, **config, "rope_theta": rope["rope_theta"],
            "rope_scaling": {"type": "mrope", "mrope_section": rope["mrope_section"]}}
    (ckpt / "config.json").write_text(json.dumps(flat))
    load.cache_clear()
    attention, grid = GuiActorAgent(checkpoint=ckpt).attention(obs, prompt)
    assert grid == (26, 47) and np.array_equal(attention, expected)
