"""Each family's own prompt, as an OpenAI chat ``messages`` list.

A builder gets the step instruction, the size of the image as sent (after
``Family.resize_for``) and the image as a data URL (the caller encodes it), and
returns a ``Prompt``. The texts are the ones published with each model (source in
the comment above each); only the instruction is substituted.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Size = tuple[int, int]


@dataclass(frozen=True)
class Prompt:
    """What the client sends.

    - ``messages``: OpenAI chat messages (the image as an ``image_url`` part).
    - ``image_size``: (w, h) the screenshot must be resized to before encoding.
    - ``prefill``: text the assistant turn must start with, or None. With vLLM, send
      it as a final ``{"role": "assistant", "content": prefill}`` message with
      ``extra_body={"continue_final_message": True, "add_generation_prompt": False}``;
      parse ``prefill + completion`` (or the completion alone: no prefill here holds
      coordinates).
    - ``tools``: tool declarations to send with the request, or None.
    - ``api``: "chat.completions", or "responses" for the OpenAI computer-use tool
      (convert the parts: text -> ``input_text``, image_url -> ``input_image``).
    """
    messages: list[dict[str, Any]]
    image_size: Size
    prefill: str | None = None
    tools: list[dict[str, Any]] | None = None
    api: str = "chat.completions"
    extra: dict[str, Any] = field(default_factory=dict)


def image_part(image_url: str, detail: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": image_url}}
    if detail:
        part["image_url"]["detail"] = detail
    return part


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


def system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


# --- UI-TARS ------------------------------------------------------------------------

# GROUNDING template of bytedance/UI-TARS codes/prompts.py (README "Prompt Usage
# Guide": only the Action, no Thought; used for grounding evaluation).
UI_TARS_GROUNDING = (
    "You are a GUI agent. You are given a task and your action history, with screenshots. "
    "You need to perform the next action to complete the task. \n\n## Output Format\n\nAction: ...\n\n\n"
    "## Action Space\nclick(start_box='<|box_start|>(x1,y1)<|box_end|>')\n\n## User Instruction\n{instruction}")


def ui_tars_15(instruction: str, size: Size, image_url: str) -> Prompt:
    # Instruction text first, then the screenshot (OSWorld's uitars agent order).
    return Prompt([user(text_part(UI_TARS_GROUNDING.format(instruction=instruction)),
                        image_part(image_url))], size)


# UI-TARS (v1) grounding query: "Output only the coordinate of one point in your
# response. What element matches the following task: " + instruction; answer "(x,y)"
# in [0,1000) (used by agents that call UI-TARS-7B as a grounder, e.g. Agent-S's
# grounding agent; image before text).
UI_TARS_V1_GROUNDING = ("Output only the coordinate of one point in your response. "
                        "What element matches the following task: {instruction}")


def ui_tars_v1(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(image_part(image_url),
                        text_part(UI_TARS_V1_GROUNDING.format(instruction=instruction)))], size)


# --- Qwen ---------------------------------------------------------------------------

# Qwen2-VL grounding with box tokens, as the ScreenSpot-Pro Qwen2-VL adapter asks
# (likaixin2000/ScreenSpot-Pro-GUI-Grounding, models/qwen2vl.py).
QWEN2_VL_GROUNDING = 'Output the bounding box in the image corresponding to the instruction "{instruction}" with grounding.'


def qwen2_vl(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(image_part(image_url),
                        text_part(QWEN2_VL_GROUNDING.format(instruction=instruction)))], size)


# OS-Atlas-Base-7B model card ("(with bbox)" -> <|box_start|>(x1,y1),(x2,y2)<|box_end|>);
# the same text with "(with point)" is SeeClick's prompt.
OS_ATLAS_GROUNDING = ('In this UI screenshot, what is the position of the element corresponding '
                      'to the command "{instruction}" (with bbox)?')


def os_atlas(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(image_part(image_url),
                        text_part(OS_ATLAS_GROUNDING.format(instruction=instruction)))], size)


def _computer_use_tool(width: int, height: int) -> dict[str, Any]:
    """Qwen2.5-VL's ``computer_use`` function (Qwen2.5-VL computer_use cookbook via
    qwen-agent; as sent by likaixin2000/ScreenSpot-Pro-GUI-Grounding models/qwen2_5vl.py).
    The resolution is that of the image as sent (the smart-resized size)."""
    actions = ("* `key`: Performs key down presses on the arguments passed in order, then performs key releases in reverse order.\n"
               "* `type`: Type a string of text on the keyboard.\n"
               "* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen.\n"
               "* `left_click`: Click the left mouse button.\n"
               "* `left_click_drag`: Click and drag the cursor to a specified (x, y) pixel coordinate on the screen.\n"
               "* `right_click`: Click the right mouse button.\n"
               "* `middle_click`: Click the middle mouse button.\n"
               "* `double_click`: Double-click the left mouse button.\n"
               "* `scroll`: Performs a scroll of the mouse scroll wheel.\n"
               "* `wait`: Wait specified seconds for the change to happen.\n"
               "* `terminate`: Terminate the current task and report its completion status.")
    description = (
        "Use a mouse and keyboard to interact with a computer, and take screenshots.\n"
        "* This is an interface to a desktop GUI. You do not have access to a terminal or applications menu. "
        "You must click on desktop icons to start applications.\n"
        "* Some applications may take time to start or process actions, so you may need to wait and take "
        "successive screenshots to see the results of your actions. E.g. if you click on Firefox and a window "
        "doesn't open, try wait and taking another screenshot.\n"
        f"* The screen's resolution is {width}x{height}.\n"
        "* Whenever you intend to move the cursor to click on an element like an icon, you should consult a "
        "screenshot to determine the coordinates of the element before moving the cursor.\n"
        "* If you tried clicking on a program or link but it failed to load, even after waiting, try adjusting "
        "your cursor position so that the tip of the cursor visually falls on the element that you want to click.\n"
        "* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. "
        "Don't click boxes on their edges unless asked.")
    return {"type": "function", "function": {
        "name_for_human": "computer_use", "name": "computer_use", "description": description,
        "parameters": {"properties": {
            "action": {"description": "The action to perform. The available actions are:\n" + actions,
                       "enum": ["key", "type", "mouse_move", "left_click", "left_click_drag", "right_click",
                                "middle_click", "double_click", "scroll", "wait", "terminate"],
                       "type": "string"},
            "keys": {"description": "Required only by `action=key`.", "type": "array"},
            "text": {"description": "Required only by `action=type`.", "type": "string"},
            "coordinate": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top "
                                          "edge) coordinates to move the mouse to. Required only by "
                                          "`action=mouse_move` and `action=left_click_drag`.", "type": "array"},
            "pixels": {"description": "The amount of scrolling to perform. Positive values scroll up, negative "
                                      "values scroll down. Required only by `action=scroll`.", "type": "number"},
            "time": {"description": "The seconds to wait. Required only by `action=wait`.", "type": "number"},
            "status": {"description": "The status of the task. Required only by `action=terminate`.",
                       "type": "string", "enum": ["success", "failure"]}},
            "required": ["action"], "type": "object"},
        "args_format": "Format the arguments as a JSON object."}}


def qwen25_vl(instruction: str, size: Size, image_url: str) -> Prompt:
    tool = json.dumps(_computer_use_tool(*size), ensure_ascii=False)
    text = ("You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with "
            "the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n"
            f"<tools>\n{tool}\n</tools>\n\nFor each function call, return a json object with function name "
            "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')
    return Prompt([system(text), user(image_part(image_url), text_part(instruction))], size)


# Qwen3-VL point grounding in relative [0,1000] coordinates, JSON out, in the style
# of the Qwen3-VL 2D-grounding cookbook (QwenLM/Qwen3-VL README, "Precise Object
# Grounding Across Formats": relative coordinates, boxes and points).
QWEN3_VL_GROUNDING = ('Locate the UI element to interact with for the instruction "{instruction}" '
                      'in this screenshot, and output its point coordinates in JSON format: '
                      '[{{"point_2d": [x, y], "label": "..."}}].')


def qwen3_vl(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(image_part(image_url),
                        text_part(QWEN3_VL_GROUNDING.format(instruction=instruction)))], size)


# --- others -------------------------------------------------------------------------

# UGround-V1 (Qwen2-VL based): the prompt of the API-service mode its reported scores
# use (OSU-NLP-Group/UGround, grounding/uground_qwen2vl_serve.py); answer "(x, y)" in
# [0,1000).
UGROUND_V1 = ("\nYour task is to help the user identify the precise coordinates (x, y) of a specific "
              "area/element/object on the screen based on a description.\n\n"
              "- Your response should aim to point to the center or a representative point within the "
              "described area/element/object as accurately as possible.\n"
              "- If the description is unclear or ambiguous, infer the most relevant area or element based "
              "on its likely context or purpose.\n"
              "- Your answer should be a single string (x, y) corresponding to the point of the interest.\n\n"
              "Description: {instruction}\n\nAnswer:")


def uground_v1(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(image_part(image_url), text_part(UGROUND_V1.format(instruction=instruction)))], size)


# Aguvis grounding mode (xlang-ai/aguvis src/aguvis/constants.py and serve/cli.py):
# this system message, and generation continued after
# "<|im_start|>assistant<|recipient|>all\n". The user text is the ScreenSpot-Pro
# Aguvis adapter's (ZeonLap/ScreenSpot-Pro-GUI-Grounding, models/aguvis.py).
AGUVIS_SYSTEM = ("You are a GUI agent. You are given a task and a screenshot of the screen. "
                 "You need to perform a series of pyautogui actions to complete the task.")
AGUVIS_USER = "Please complete the following tasks by clicking using `pyautogui.click`:\n{instruction}"
# Over a chat API the assistant turn already begins with "<|im_start|>assistant\n";
# Aguvis was trained on "<|im_start|>assistant<|recipient|>all\n" (no newline before
# the recipient), which only a server using Aguvis's own chat template reproduces.
AGUVIS_PREFILL = "<|recipient|>all\n"


def aguvis(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([system(AGUVIS_SYSTEM),
                   user(image_part(image_url), text_part(AGUVIS_USER.format(instruction=instruction)))],
                  size, prefill=AGUVIS_PREFILL)


# CogAgent-9B-20241220 query (THUDM/CogAgent inference/cli_demo.py; platform and
# format as in the ScreenSpot-Pro CogAgent adapter, models/cogagent24.py).
COGAGENT_QUERY = "Task: {instruction}\nHistory steps: \n(Platform: WIN)\n(Answer in Action-Operation format.)"


def cogagent(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(image_part(image_url), text_part(COGAGENT_QUERY.format(instruction=instruction)))], size)


# SeeClick (njucckevin/SeeClick readme.md): answer "(x,y)" with x, y in [0,1].
SEECLICK = ('In this UI screenshot, what is the position of the element corresponding to the command '
            '"{instruction}" (with point)?')


def seeclick(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(image_part(image_url), text_part(SEECLICK.format(instruction=instruction)))], size)


# MedSPOT's pixel prompt for GPT models (Tajamul21/MedSPOT,
# Evaluation_scripts/evaluate_gpt5.py and evaluate_gpt4omini.py: text, then the PNG
# with detail "high").
GPT_PIXELS = ("{instruction}\nImage resolution: width={w}, height={h}.\nClick the correct UI element.\n"
              "Return ONLY integer pixel coordinates as (x,y) where x is in [0,{w}] and y is in [0,{h}]. "
              "No explanation.")


def gpt_pixels(instruction: str, size: Size, image_url: str) -> Prompt:
    w, h = size
    return Prompt([user(text_part(GPT_PIXELS.format(instruction=instruction, w=w, h=h)),
                        image_part(image_url, detail="high"))], size)


def computer_use_tool(width: int, height: int, environment: str = "linux") -> dict[str, Any]:
    """The OpenAI computer-use tool declaration (Responses API, ``computer_use_preview``);
    the model's clicks are pixels of this display size."""
    return {"type": "computer_use_preview", "display_width": int(width),
            "display_height": int(height), "environment": environment}


def openai_computer_use(instruction: str, size: Size, image_url: str) -> Prompt:
    return Prompt([user(text_part(instruction), image_part(image_url))], size,
                  tools=[computer_use_tool(*size)], api="responses", extra={"truncation": "auto"})
