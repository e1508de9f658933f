"""The families by name, and what each one's coordinates mean (with sources)."""
from __future__ import annotations

from clinigym.agents.families import answers, prompts
from clinigym.agents.families.coords import NORM_2, NORM_4, PIXELS, REL_1000, REL_1000_PADDED
from clinigym.agents.families.family import Family
from clinigym.agents.families.resize import UI_TARS_MAX_PIXELS, UI_TARS_MIN_PIXELS, AsIs, SmartResize
from clinigym.agents.families.syntax import (
    COGAGENT_BOX,
    COMPUTER_CALL,
    JSON_PAIR,
    JSON_XY,
    PAREN,
    PAREN_POINT,
    PYAUTOGUI,
    QWEN_JSON,
    TARS_ACTION,
    syntax,
)

# Shared pieces ----------------------------------------------------------------------
TARS = syntax("tars", [TARS_ACTION, PAREN])           # Action args, else bare tuples
QWEN_BOXES = syntax("qwen_boxes", [PAREN])              # (x1,y1),(x2,y2) boxes or (x,y)
QWEN_JSON_THEN_PAREN = syntax("qwen_json", [QWEN_JSON, PAREN])
POINT_TUPLES = syntax("tuples", [PAREN])
GPT = syntax("gpt", [PAREN_POINT, JSON_XY, JSON_PAIR])
AGUVIS = syntax("pyautogui", [PYAUTOGUI])
COGAGENT = syntax("cogagent", [COGAGENT_BOX])
COMPUTER_USE = syntax("computer_call", [COMPUTER_CALL])

AS_IS = AsIs()
# How a family names a mark in the som mode (`observed`): its own call with a mark argument,
# or the bare argument for a family that answers a bare point. OpenAI computer use has none:
# its tool's actions hold x and y only.
CLICK_MARK = "click(mark=12)"
MARK_ARG = "mark=12"
QWEN_DEFAULT = SmartResize()                           # qwen-vl-utils budget


def _gpt_pixels(name: str, model: str, script: str) -> Family:
    """An OpenAI chat model asked for pixel coordinates with MedSPOT's prompt."""
    return Family(
        name, f"{model} with MedSPOT's pixel prompt",
        "absolute pixels of the image as sent (its size is stated in the prompt); '(x,y)' or JSON",
        PIXELS, AS_IS, prompts.gpt_pixels, GPT, answers.paren(","),
        (f"Tajamul21/MedSPOT Evaluation_scripts/{script}",), MARK_ARG)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family(
        "ui-tars-1.5", "UI-TARS-1.5 (Qwen2.5-VL based), GROUNDING prompt",
        "absolute pixels of the smart-resized image (factor 28, min_pixels 100*28*28, "
        "max_pixels 16384*28*28); click(start_box='(x,y)')",
        PIXELS, SmartResize(UI_TARS_MIN_PIXELS, UI_TARS_MAX_PIXELS), prompts.ui_tars_15, TARS,
        answers.tars_action,
        ("bytedance/UI-TARS README_coordinates.md, README_deploy.md, codes/ui_tars/action_parser.py",
         "bytedance/UI-TARS codes/prompts.py (GROUNDING)"), CLICK_MARK),
    Family(
        "ui-tars", "UI-TARS v1 (Qwen2-VL based, e.g. UI-TARS-7B-DPO), one-point grounding query",
        "relative [0,1000) of each side; '(x,y)' or click(start_box='(x,y)')",
        REL_1000, AS_IS, prompts.ui_tars_v1, TARS, answers.paren(","),
        ("bytedance/UI-TARS codes/ui_tars/action_parser.py: qwen2vl relative coordinates / 1000",
         "the one-point grounding query used with UI-TARS v1 grounders"), CLICK_MARK),
    Family(
        "os-atlas-base", "OS-Atlas-Base (Qwen2-VL based), '(with bbox)' prompt",
        "box <|box_start|>(x1,y1),(x2,y2)<|box_end|> in relative [0,1000); the click is its centre",
        REL_1000, AS_IS, prompts.os_atlas, QWEN_BOXES, answers.box_tokens,
        ("OS-Atlas-Base-7B model card example (copied in aptsunny/MobileAgent test_model_v4.py)",
         "likaixin2000/ScreenSpot-Pro-GUI-Grounding models/osatlas7b.py (/1000)"), MARK_ARG),
    Family(
        "qwen2-vl", "Qwen2-VL-Instruct grounding with box tokens",
        "box <|box_start|>(x1,y1),(x2,y2)<|box_end|> in relative [0,1000); the click is its centre",
        REL_1000, AS_IS, prompts.qwen2_vl, QWEN_BOXES, answers.box_tokens,
        ("Qwen2-VL paper/README: boxes normalised to [0,1000)",
         "likaixin2000/ScreenSpot-Pro-GUI-Grounding models/qwen2vl.py"), MARK_ARG),
    Family(
        "qwen2.5-vl", "Qwen2.5-VL-Instruct with the computer_use function",
        "absolute pixels of the smart-resized image (factor 28, min_pixels 4*28*28, "
        "max_pixels 16384*28*28); tool call 'coordinate': [x, y], or JSON bbox_2d / point_2d",
        PIXELS, QWEN_DEFAULT, prompts.qwen25_vl, QWEN_JSON_THEN_PAREN, answers.qwen_tool_call,
        ("Qwen2.5-VL technical report / Model Studio docs: absolute coordinates of the resized image",
         "QwenLM/Qwen3-VL cookbooks/mobile_agent.ipynb (Qwen2.5-VL mobile_use on a 1092x2408 image)",
         "likaixin2000/ScreenSpot-Pro-GUI-Grounding models/qwen2_5vl.py"),
        '{"name": "computer_use", "arguments": {"action": "left_click", "mark": 12}}'),
    Family(
        "qwen3-vl", "Qwen3-VL-Instruct point grounding (JSON)",
        "relative [0,1000] of each side; [{\"point_2d\": [x, y]}] or {\"bbox_2d\": [...]} (centre)",
        REL_1000, AS_IS, prompts.qwen3_vl, QWEN_JSON_THEN_PAREN, answers.qwen_points_json,
        ("QwenLM/Qwen3-VL README (2D grounding: relative coordinates)",
         "Qwen3-VL 2D grounding cookbook: relative 0-1000 instead of Qwen2.5-VL's absolute pixels"),
        '[{"mark": 12, "label": "..."}]'),
    Family(
        "uground-v1", "UGround-V1 (Qwen2-VL based)",
        "relative [0,1000) of each side; '(x, y)'",
        REL_1000, AS_IS, prompts.uground_v1, POINT_TUPLES, answers.paren(", "),
        ("OSU-NLP-Group/UGround grounding/uground_qwen2vl_serve.py (x/1000*width)",), MARK_ARG),
    Family(
        "aguvis", "Aguvis (Qwen2-VL based), grounding mode with the <|recipient|>all prefill",
        "normalised [0,1] of each side; pyautogui.click(x=0.1175, y=0.0725)",
        NORM_4, AS_IS, prompts.aguvis, AGUVIS, answers.pyautogui_click,
        ("xlang-ai/aguvis src/aguvis/constants.py, src/aguvis/serve/cli.py",
         "ZeonLap/ScreenSpot-Pro-GUI-Grounding models/aguvis.py, results/aguvis.json"), "pyautogui.click(mark=12)"),
    Family(
        "cogagent", "CogAgent-9B-20241220 (GLM-4V based), Action-Operation format",
        "box CLICK(box=[[x1,y1,x2,y2]]) with three-digit relative values 000-999; the click is its centre",
        REL_1000_PADDED, AS_IS, prompts.cogagent, COGAGENT, answers.cogagent_click,
        ("THUDM/CogAgent Action_space_en.md, inference/cli_demo.py",), "CLICK(mark=12)"),
    Family(
        "seeclick", "SeeClick (Qwen-VL based), '(with point)' prompt",
        "normalised [0,1] of each side, two decimals; '(0.17,0.06)' (or a box of four, centre)",
        NORM_2, AS_IS, prompts.seeclick, POINT_TUPLES, answers.paren(","),
        ("njucckevin/SeeClick readme.md",), MARK_ARG),
    _gpt_pixels("gpt-4o", "GPT-4o", "evaluate_gpt4omini.py"),
    _gpt_pixels("gpt-5", "GPT-5", "evaluate_gpt5.py"),
    Family(
        "openai-computer-use", "OpenAI computer use (Responses API computer_use_preview tool)",
        "pixels of the display declared in the tool (= the image as sent); the answer text is the "
        "JSON of the computer_call item(s): {\"type\": \"computer_call\", \"action\": {\"type\": \"click\", "
        "\"x\": .., \"y\": ..}} (or an \"actions\" list)",
        PIXELS, AS_IS, prompts.openai_computer_use, COMPUTER_USE, answers.computer_call,
        ("OpenAI computer use guide / API reference (ResponseComputerToolCall)",)),
)}


def get_family(name: str) -> Family:
    key = name.strip().lower().replace("_", "-")
    if key not in FAMILIES:
        raise KeyError(f"unknown model family {name!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[key]
