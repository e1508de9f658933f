"""Model-family adapters for GUI-grounding models served over an OpenAI-compatible
chat API: each family's prompt, the image size to send, and the conversion of its
answer text to points in observation pixels (and back, for test servers).

    fam = get_family("ui-tars-1.5")
    w, h = fam.resize_for((1920, 1080))                # (1932, 1092): resize, then encode
    prompt = fam.build_messages("Click 'Delete this study'.", (1920, 1080), data_url)
    ...                                                # send prompt.messages (+ prefill, tools)
    points = fam.parse(answer_text, (1920, 1080))      # [(x, y), ...] observation pixels, best first

Modules: ``resize`` (smart_resize and the per-family budgets), ``coords`` (native
coordinate spaces), ``syntax`` (finding coordinates in text), ``thinking`` (think
blocks), ``prompts`` (the published prompts), ``answers`` (writing native answers),
``observed`` (what a request shows of each observation mode: the tree text, the marks),
``family`` (the Family type), ``registry`` (the table of families).
"""
from clinigym.agents.families.family import Family
from clinigym.agents.families.prompts import Prompt
from clinigym.agents.families.registry import FAMILIES, get_family
from clinigym.agents.families.resize import smart_resize
from clinigym.agents.families.thinking import strip_think

__all__ = ["FAMILIES", "Family", "Prompt", "get_family", "smart_resize", "strip_think"]
