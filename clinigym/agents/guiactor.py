"""GUI-Actor (Microsoft; Qwen2-VL / Qwen2.5-VL backbones) run in-process.

GUI-Actor does not write coordinates. The prompt ends in an assistant turn that
already holds the click with a pointer slot,
``pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)``, and a small
action head (``multi_patch_pointer_head`` in the checkpoint) attends from the last
hidden state of ``<|pointer_pad|>`` over the image's visual tokens. Its softmax
is a distribution over the merged 28x28 patches of the smart-resized screenshot;
the click is read off that map. It needs hidden states, so it runs in-process
(torch and transformers: the optional extra ``clinigym[guiactor]``), from a local
checkpoint only: nothing is downloaded at run time.

The architecture, the weight names, the special tokens, the prompts and the region
rule below follow the public GUI-Actor code (microsoft/GUI-Actor,
src/gui_actor/{constants,inference,modeling,modeling_qwen25vl}.py), reimplemented:

- keys: the visual tokens' embeddings as they enter the language model (the
  vision merger's output), passed through the head's self-attention, residual
  and LayerNorm, then a 2-layer GELU MLP; query: the final (normed) hidden state
  at ``<|pointer_pad|>`` through its own MLP; scores: softmax(q k^T / sqrt(d));
- click: GUI-Actor's own rule (patches above 0.3 x the best score, 4-connected
  regions ranked by mean score, the best region's score-weighted centre), or the
  best single patch (``point="patch"``).

The pure part (patch grid, patch centres, top-K with neighbour suppression,
regions) is plain numpy and needs no torch.
"""
from __future__ import annotations

import functools
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from clinigym.agents.families.coords import Point, Size
from clinigym.agents.families.resize import QWEN_FACTOR, smart_resize
from clinigym.agents.intent import action_type, typed_text
from clinigym.core.actions import Action
from clinigym.core.context import AgentContext
from clinigym.core.errors import AgentError

if TYPE_CHECKING:   # torch is an optional extra: imported only when a model is loaded
    import torch

Grid = tuple[int, int]   # (rows, cols) of merged patches

POINTER_START, POINTER_PAD, POINTER_END = "<|pointer_start|>", "<|pointer_pad|>", "<|pointer_end|>"
IMAGE_PAD = "<|image_pad|>"
HEAD_PREFIX = "multi_patch_pointer_head."
HEAD_ATTENTION_HEADS = 8      # fixed in GUI-Actor's head; not recorded in the checkpoint
REGION_THRESHOLD = 0.3        # GUI-Actor keeps patches scoring above 0.3 x the best one

# GUI-Actor's system prompts: its Qwen2-VL models were trained with the first,
# its Qwen2.5-VL models with the second (eval/screenSpot*.py, demo/app.py).
SYSTEM_PROMPTS = {
    "qwen2_vl": "You are a GUI agent. You are given a task and a screenshot of the screen. "
                "You need to perform a series of pyautogui actions to complete the task.",
    "qwen2_5_vl": "You are a GUI agent. Given a screenshot of the current GUI and a human instruction, "
                  "your task is to locate the screen element that corresponds to the instruction. "
                  "You should output a PyAutoGUI action that performs a click on the correct position. "
                  "To indicate the click location, we will use some special tokens, which is used to "
                  "refer to a visual patch later. For example, you can output: "
                  "pyautogui.click(<your_special_token_here>).",
}
# The assistant turn GUI-Actor's inference appends (its `use_placeholder` mode): the
# pointer slot is given, so one forward pass yields the query without generating.
ASSISTANT_PREFIX = f"<|im_start|>assistant<|recipient|>os\npyautogui.click({POINTER_START}{POINTER_PAD}{POINTER_END})"


class CheckpointError(AgentError):
    """The checkpoint path is missing or is not a GUI-Actor checkpoint."""


# -- the pure part: attention over the patch grid -> observation pixels -------------------

def patch_grid(size: Size, min_pixels: int, max_pixels: int, factor: int = QWEN_FACTOR) -> Grid:
    """(rows, cols) of merged patches the model sees for a screenshot of ``size`` (w, h):
    smart_resize to multiples of ``factor`` (patch 14 x merge 2), one token per cell."""
    w, h = size
    rh, rw = smart_resize(h, w, factor, min_pixels, max_pixels)
    return rh // factor, rw // factor


def grid_to_observation(x: float, y: float, grid: Grid, size: Size) -> Point:
    """A point in patch units of the grid (x right, y down, 0..cols and 0..rows) in
    observation pixels. The resize stretches each axis separately, so does this."""
    rows, cols = grid
    return x / cols * size[0], y / rows * size[1]


def patch_centre(index: int, grid: Grid, size: Size) -> Point:
    """Centre of merged patch ``index`` (row-major, as the visual tokens are ordered)."""
    row, col = divmod(index, grid[1])
    return grid_to_observation(col + 0.5, row + 0.5, grid, size)


def top_patches(scores: np.ndarray, grid: Grid, k: int, radius: int = 1) -> list[int]:
    """Indices of the ``k`` best patches, each at least ``radius + 1`` cells (Chebyshev)
    from every better one kept, so that one blob does not fill the top-K. Ties go to
    the lower index."""
    cols = grid[1]
    kept: list[int] = []
    for index in np.argsort(-np.asarray(scores, dtype=float), kind="stable"):
        row, col = divmod(int(index), cols)
        if all(max(abs(row - r), abs(col - c)) > radius for r, c in (divmod(i, cols) for i in kept)):
            kept.append(int(index))
            if len(kept) == k:
                break
    return kept


@dataclass(frozen=True)
class Region:
    patches: tuple[int, ...]      # row-major indices, in discovery order
    score: float                  # mean attention of its patches
    centre: tuple[float, float]   # attention-weighted centre, in patch units (x, y)


def regions(scores: np.ndarray, grid: Grid, threshold: float = REGION_THRESHOLD) -> list[Region]:
    """GUI-Actor's candidate regions: patches scoring above ``threshold`` x the best,
    grouped into 4-connected regions, best mean score first (ties: the region found
    first, scanning row-major)."""
    rows, cols = grid
    flat = np.asarray(scores, dtype=float).reshape(-1)
    active = set(np.flatnonzero(flat > threshold * flat.max()).tolist())
    found: list[Region] = []
    for seed in sorted(active):
        if seed not in active:
            continue
        active.discard(seed)
        members, queue = [seed], [seed]
        while queue:
            row, col = divmod(queue.pop(0), cols)
            for r, c in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)):
                neighbour = r * cols + c
                if 0 <= r < rows and 0 <= c < cols and neighbour in active:
                    active.discard(neighbour)
                    members.append(neighbour)
                    queue.append(neighbour)
        found.append(_region(members, flat, cols))
    return sorted(found, key=lambda region: region.score, reverse=True)


def _region(members: list[int], flat: np.ndarray, cols: int) -> Region:
    values = flat[members]
    # Normalised first, so that a one-patch region's centre is its patch centre exactly.
    weights = values / values.sum()
    xs = np.array([m % cols + 0.5 for m in members])
    ys = np.array([m // cols + 0.5 for m in members])
    return Region(tuple(members), float(values.mean()), (float(weights @ xs), float(weights @ ys)))


def build_prompt(instruction: str, backbone: str) -> str:
    """The text GUI-Actor's inference tokenizes: its chat template rendered for a system
    turn and a user turn of image then instruction, plus the assistant prefix. The one
    ``<|image_pad|>`` stands for the image's tokens (expanded in `GuiActorAgent.encode`)."""
    return (f"<|im_start|>system\n{SYSTEM_PROMPTS[backbone]}<|im_end|>\n"
            f"<|im_start|>user\n<|vision_start|>{IMAGE_PAD}<|vision_end|>{instruction}<|im_end|>\n"
            + ASSISTANT_PREFIX)


# -- loading ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Loaded:
    model: Any            # Qwen2VLForConditionalGeneration or Qwen2_5_VLForConditionalGeneration
    head: Any             # torch.nn.ModuleDict with GUI-Actor's head's parameter names
    tokenizer: Any
    backbone: str         # "qwen2_vl" or "qwen2_5_vl"
    pointer_pad_id: int


def _not_guiactor(path: Path, why: str) -> CheckpointError:
    return CheckpointError(f"{path} is not a GUI-Actor checkpoint: {why}")


def _head_state(path: Path) -> dict[str, torch.Tensor]:
    """The action head's tensors from the checkpoint's safetensors files, names without
    the ``multi_patch_pointer_head.`` prefix."""
    from safetensors import safe_open
    state = {}
    for shard in sorted(path.glob("*.safetensors")):
        with safe_open(str(shard), framework="pt") as reader:
            for key in reader.keys():
                if key.startswith(HEAD_PREFIX):
                    state[key[len(HEAD_PREFIX):]] = reader.get_tensor(key)
    if not state:
        raise _not_guiactor(path, f"no {HEAD_PREFIX}* weights (the action head) in its *.safetensors files")
    return state


def _build_head(state: dict[str, torch.Tensor]) -> torch.nn.ModuleDict:
    """GUI-Actor's head with its parameter names (projection_enc.{0,2}, projection_dec.{0,2},
    self_attention, layer_norm); sizes read from the weights."""
    from torch import nn
    projection, d_model = state["projection_enc.0.weight"].shape

    def mlp() -> nn.Sequential:
        return nn.Sequential(nn.Linear(d_model, projection), nn.GELU(), nn.Linear(projection, d_model))

    head = nn.ModuleDict({
        "projection_enc": mlp(),
        "projection_dec": mlp(),
        "self_attention": nn.MultiheadAttention(d_model, HEAD_ATTENTION_HEADS, batch_first=True),
        "layer_norm": nn.LayerNorm(d_model),
    })
    head.load_state_dict(state, strict=True)
    return head.eval()


def pointer_scores(head: torch.nn.ModuleDict, visual: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """The head's forward pass: (n_query, n_patches) softmax over the patches."""
    import torch
    enc = visual.unsqueeze(0)
    context, _ = head["self_attention"](enc, enc, enc, need_weights=False)
    keys = head["projection_enc"](head["layer_norm"](enc + context).squeeze(0))
    queries = head["projection_dec"](query)
    logits = queries @ keys.T / math.sqrt(keys.shape[-1])
    return torch.softmax(logits.float(), dim=-1)


def _no_load_report(record: logging.LogRecord) -> bool:
    return "LOAD REPORT" not in record.getMessage()


@functools.lru_cache(maxsize=1)
def load(checkpoint: str, device: str = "cpu", dtype: str = "auto") -> Loaded:
    """Model, head and tokenizer of a local GUI-Actor checkpoint. Cached: the runner
    makes one agent per scenario, and a 7B model must not load once per scenario."""
    path = Path(checkpoint).expanduser()
    if not path.is_dir():
        raise CheckpointError(f"GUI-Actor checkpoint {path} does not exist (a local folder is "
                              "needed; nothing is downloaded at run time)")
    if not (path / "config.json").is_file():
        raise _not_guiactor(path, "no config.json")
    try:
        import transformers
    except ImportError as exc:
        raise ImportError("the guiactor agent needs torch and transformers: "
                          "pip install -e '.[guiactor]'") from exc
    config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
    classes = {"qwen2_vl": transformers.Qwen2VLForConditionalGeneration,
               "qwen2_5_vl": transformers.Qwen2_5_VLForConditionalGeneration}
    if config.model_type not in classes:
        raise _not_guiactor(path, f"model_type {config.model_type!r}, not one of {', '.join(classes)}")
    head_state = _head_state(path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    ids = tokenizer.convert_tokens_to_ids([POINTER_START, POINTER_PAD, POINTER_END])
    if tokenizer.unk_token_id in ids or None in ids:
        raise _not_guiactor(path, f"its tokenizer lacks {POINTER_START} {POINTER_PAD} {POINTER_END}")
    if getattr(config, "pointer_pad_token_id", ids[1]) != ids[1]:
        raise _not_guiactor(path, f"config pointer_pad_token_id {config.pointer_pad_token_id} "
                                  f"is not the tokenizer's {ids[1]}")
    # The plain transformers class: it knows how to rename the checkpoint's Qwen2-VL
    # weight layout. It leaves the head's weights over (loaded above), so its load
    # report, which would list them as unexpected, is dropped and missing weights are
    # checked here. (A filter, not a higher level: that level turns on other warnings.)
    modeling_log = logging.getLogger("transformers.modeling_utils")
    modeling_log.addFilter(_no_load_report)
    try:
        model, info = classes[config.model_type].from_pretrained(path, local_files_only=True, dtype=dtype,
                                                                 output_loading_info=True)
    finally:
        modeling_log.removeFilter(_no_load_report)
    if info["missing_keys"]:
        raise _not_guiactor(path, f"weights missing: {', '.join(sorted(info['missing_keys'])[:5])}")
    model = model.to(device).eval()
    head = _build_head(head_state).to(device=device, dtype=model.dtype)
    return Loaded(model, head, tokenizer, config.model_type, ids[1])


def image_processor(checkpoint: str, max_pixels: int | None = None) -> Any:
    """Qwen2-VL's PIL image processor (the default one needs torchvision, which the
    extra does not install): smart_resize with the checkpoint's budget, or
    ``max_pixels``, then 14-pixel patches in 2x2 merge order."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    budget = {} if max_pixels is None else {"max_pixels": max_pixels}
    return Qwen2VLImageProcessorPil.from_pretrained(checkpoint, local_files_only=True, **budget)


# -- the agent ----------------------------------------------------------------------------

class GuiActorAgent:
    name = "guiactor"

    def __init__(self, context: AgentContext | None = None, seed: int | None = None, *,
                 checkpoint: str | os.PathLike | None = None,
                 top_k: int = 3, point: Literal["region", "patch"] = "region", device: str = "cpu",
                 dtype: str = "auto", max_pixels: int | None = None):
        if checkpoint is None:
            raise CheckpointError("the guiactor agent needs a local GUI-Actor checkpoint (--checkpoint PATH)")
        if point not in ("region", "patch"):
            raise ValueError(f"point must be 'region' or 'patch', got {point!r}")
        self.checkpoint = str(Path(checkpoint).expanduser().resolve())
        self.top_k, self.point = top_k, point
        self.loaded = load(self.checkpoint, device, dtype)
        self.images = image_processor(self.checkpoint, max_pixels)

    def reset(self, seed: int | None = None) -> None:
        pass   # deterministic: one forward pass, no sampling

    def encode(self, rgb: np.ndarray, prompt: str) -> tuple[dict[str, Any], Grid]:
        """The model's inputs, as Qwen2-VL's processor makes them (its text part: the
        image pad repeated once per merged patch; token types 1 on the image), and the grid."""
        import torch
        from PIL import Image
        images = self.images(images=[Image.fromarray(rgb)], return_tensors="pt")
        grid = self._grid(rgb, images["image_grid_thw"][0].tolist())
        text = prompt.replace(IMAGE_PAD, IMAGE_PAD * (grid[0] * grid[1]))
        input_ids = self.loaded.tokenizer(text, return_tensors="pt")["input_ids"]
        is_image = input_ids == self.loaded.model.config.image_token_id
        if int(is_image.sum()) != grid[0] * grid[1] or int((input_ids == self.loaded.pointer_pad_id).sum()) != 1:
            raise RuntimeError(f"the prompt does not tokenize to one {IMAGE_PAD} per patch and one {POINTER_PAD}")
        inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
                  "mm_token_type_ids": is_image.long(), **images}
        return {k: v.to(self.loaded.model.device) for k, v in inputs.items()}, grid

    def _grid(self, rgb: np.ndarray, thw: list[int]) -> Grid:
        """The merged grid of the processed image, checked against smart_resize: the
        pixel mapping assumes the image was resized exactly so."""
        merge = self.images.merge_size
        grid = (thw[1] // merge, thw[2] // merge)
        expected = patch_grid((rgb.shape[1], rgb.shape[0]), self.images.size["shortest_edge"],
                              self.images.size["longest_edge"], self.images.patch_size * merge)
        if grid != expected:
            raise RuntimeError(f"image processor grid {grid} is not smart_resize's {expected}")
        return grid

    def attention(self, rgb: np.ndarray, prompt: str) -> tuple[np.ndarray, Grid]:
        """The head's attention over the merged patches, as a (rows, cols) array."""
        import torch
        inputs, grid = self.encode(rgb, prompt)
        model = self.loaded.model
        with torch.inference_mode():
            vision = model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"],
                                                    return_dict=True)
            # The keys are the visual tokens as they enter the language model; the
            # language model reuses this vision pass instead of running its own.
            out = model.model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                              image_grid_thw=inputs["image_grid_thw"], mm_token_type_ids=inputs["mm_token_type_ids"],
                              mm_encoder_outputs={"image": vision}, use_cache=False)
            visual = torch.cat(vision.pooler_output).to(out.last_hidden_state.dtype)
            query = out.last_hidden_state[0][inputs["input_ids"][0] == self.loaded.pointer_pad_id]
            scores = pointer_scores(self.loaded.head, visual, query)[0]
        return scores.cpu().numpy().reshape(grid), grid

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Action:
        rgb = observation["screenshot"]
        size = (rgb.shape[1], rgb.shape[0])
        instruction = observation["instruction"]
        prompt = build_prompt(instruction, self.loaded.backbone)
        t0 = time.monotonic()
        attention, grid = self.attention(rgb, prompt)
        latency = time.monotonic() - t0
        flat = attention.reshape(-1)
        peaks = [{"point": list(patch_centre(i, grid, size)), "score": float(flat[i])}
                 for i in top_patches(flat, grid, self.top_k)]
        best = [{"point": list(grid_to_observation(*r.centre, grid, size)), "score": r.score,
                 "patches": len(r.patches)} for r in regions(flat, grid)[:self.top_k]]
        chosen = best if self.point == "region" else peaks
        factor = self.images.patch_size * self.images.merge_size
        meta = {"model": self.checkpoint, "backbone": self.loaded.backbone, "prompt": prompt,
                "sent_size": [grid[1] * factor, grid[0] * factor], "grid": list(grid),
                # the raw output: the attention map, 4 significant digits (kept small in the recording)
                "raw": [[float(f"{v:.4g}") for v in row] for row in attention],
                "top_k": peaks, "regions": best, "point_rule": self.point,
                "points": [c["point"] for c in chosen], "latency": latency}
        return Action(action_type(instruction), tuple(chosen[0]["point"]),
                      text=typed_text(instruction), meta=meta)
