"""Model-family adapters (clinigym/agents/families): smart_resize, parsing of published
model outputs, format -> parse round trips, think blocks, out-of-image points, top-K
order and the prompts. Pure unit tests."""
from __future__ import annotations

import json
import math

import pytest

from clinigym.agents.families import FAMILIES, Family, get_family, smart_resize, strip_think
from clinigym.agents.families.resize import UI_TARS_MAX_PIXELS, UI_TARS_MIN_PIXELS

NAMES = ["ui-tars-1.5", "ui-tars", "os-atlas-base", "qwen2-vl", "qwen2.5-vl", "qwen3-vl",
         "uground-v1", "aguvis", "cogagent", "seeclick", "gpt-4o", "gpt-5", "openai-computer-use"]
SIZES = [(1920, 1080), (1280, 800), (3840, 2160), (1000, 1000)]
SMALL = 1280 * 28 * 28          # a small budget (Aguvis' max_pixels in MedSPOT's script)
HD = (1920, 1080)
URL = "data:image/png;base64,AAAA"


def approx(points, rel=1e-9, abs=1e-6):
    return [pytest.approx(p, rel=rel, abs=abs) for p in points]


def budgets(family: Family):
    """The family itself, and with a small max_pixels where it has a pixel budget."""
    yield family
    if hasattr(family.resize, "max_pixels"):
        yield family.with_pixels(max_pixels=SMALL)


# --- smart_resize ---------------------------------------------------------------------

@pytest.mark.parametrize("hw, kwargs, expected", [
    # 1080/28 = 38.57 -> 39*28 = 1092; 1920/28 = 68.57 -> 69*28 = 1932;
    # 1092*1932 = 2,109,744 <= 16384*28*28 = 12,845,056: no further scaling.
    ((1080, 1920), {}, (1092, 1932)),
    # 800/28 = 28.57 -> 29*28 = 812; 1280/28 = 45.71 -> 46*28 = 1288; 1,045,856 px.
    ((800, 1280), {}, (812, 1288)),
    # 2160/28 = 77.14 -> 77*28 = 2156; 3840/28 = 137.14 -> 137*28 = 3836; 8,270,416 px.
    ((2160, 3840), {}, (2156, 3836)),
    # 1000/28 = 35.71 -> 36*28 = 1008.
    ((1000, 1000), {}, (1008, 1008)),
    # max_pixels = 1280*28*28 = 1,003,520 < 2,109,744: beta = sqrt(1920*1080/1,003,520)
    # = 1.43747; 1080/beta/28 = 26.83 -> 26*28 = 728; 1920/beta/28 = 47.70 -> 47*28 = 1316.
    ((1080, 1920), {"max_pixels": SMALL}, (728, 1316)),
    # 812*1288 = 1,045,856 > 1,003,520: beta = sqrt(1,024,000/1,003,520) = 1.01015;
    # 800/beta/28 = 28.28 -> 784; 1280/beta/28 = 45.25 -> 1260.
    ((800, 1280), {"max_pixels": SMALL}, (784, 1260)),
    # 1008*1008 = 1,016,064 > 1,003,520: beta = 0.99825; 1000/beta/28 = 35.76 -> 35*28 = 980.
    ((1000, 1000), {"max_pixels": SMALL}, (980, 980)),
    # min branch: 20x20 rounds to 28x28 = 784 < 3136; beta = sqrt(3136/400) = 2.8;
    # ceil(20*2.8/28) = 2 -> 56.
    ((20, 20), {}, (56, 56)),
    # UI-TARS' min_pixels 100*28*28 = 78,400 > 224*224 = 50,176: beta = sqrt(1.5625) = 1.25;
    # ceil(224*1.25/28) = 10 -> 280.
    ((224, 224), {"min_pixels": UI_TARS_MIN_PIXELS, "max_pixels": UI_TARS_MAX_PIXELS}, (280, 280)),
])
def test_smart_resize_values(hw, kwargs, expected):
    assert smart_resize(*hw, **kwargs) == expected


def test_smart_resize_rejects_extreme_aspect_ratio():
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 2010)


@pytest.mark.parametrize("size", SIZES + [(1366, 768), (2560, 1440), (1080, 2400), (333, 777)])
@pytest.mark.parametrize("max_pixels", [16384 * 28 * 28, SMALL, 256 * 28 * 28])
def test_smart_resize_is_a_fixed_point(size, max_pixels):
    """The client sends the smart-resized image, so the server's resize is the identity."""
    w, h = size
    rh, rw = smart_resize(h, w, max_pixels=max_pixels)
    assert rh % 28 == 0 and rw % 28 == 0 and rh * rw <= max_pixels
    assert smart_resize(rh, rw, max_pixels=max_pixels) == (rh, rw)


def test_resize_for_per_family():
    assert get_family("ui-tars-1.5").resize_for(HD) == (1932, 1092)
    assert get_family("qwen2.5-vl").resize_for(HD) == (1932, 1092)
    assert get_family("qwen2.5-vl").with_pixels(max_pixels=SMALL).resize_for(HD) == (1316, 728)
    for name in ("ui-tars", "os-atlas-base", "qwen2-vl", "qwen3-vl", "uground-v1", "aguvis",
                 "cogagent", "seeclick", "gpt-4o", "gpt-5", "openai-computer-use"):
        assert get_family(name).resize_for(HD) == HD, name
    with pytest.raises(ValueError, match="as is"):
        get_family("seeclick").with_pixels(max_pixels=SMALL)


# --- registry -------------------------------------------------------------------------

def test_registry_names():
    assert list(FAMILIES) == NAMES
    for name, family in FAMILIES.items():
        assert family.name == name == name.lower() and " " not in name and "_" not in name
        assert family.coords and family.description and family.sources


def test_get_family_unknown_lists_known_names():
    assert get_family("UI-TARS-1.5") is FAMILIES["ui-tars-1.5"]
    with pytest.raises(KeyError) as err:
        get_family("llava")
    message = str(err.value)
    assert "llava" in message and all(name in message for name in NAMES)


# --- published outputs ------------------------------------------------------------------

def test_ui_tars_15_deploy_example():
    # bytedance/UI-TARS README_deploy.md, "Expected Output". Absolute pixels of the
    # smart-resized image: 1920x1080 is sent as 1932x1092.
    text = ("Thought: 我看到Preferences窗口已经打开了，但这里显示的都是系统资源相关的设置。"
            "要设置图片的颜色模式，我得先看看左侧的选项列表。嗯，\"Color Management\"这个选项看起来很有希望，"
            "应该就是处理颜色管理的地方。让我点击它看看里面有什么选项。\n"
            "Action: click(start_box='(177,549)')")
    assert get_family("ui-tars-1.5").parse(text, HD) == approx([(177 * 1920 / 1932, 549 * 1080 / 1092)])


def test_ui_tars_15_coordinates_tutorial():
    # bytedance/UI-TARS README_coordinates.md: model output (197,525), mapped with
    # int(x / new_width * width); its example screenshot size is not given, 1920x1080 here.
    text = "Thought: xxx\nAction: click(start_box='(197,525)')"
    (x, y), = get_family("ui-tars-1.5").parse(text, HD)
    assert (x, y) == pytest.approx((197 / 1932 * 1920, 525 / 1092 * 1080))
    assert (int(x), int(y)) == (195, 519)


def test_ui_tars_15_point_and_box_token_forms():
    fam = get_family("ui-tars-1.5")
    # bytedance/UI-TARS codes/tests/action_parser_test.py: the <point> form ...
    assert fam.parse("Thought: test\nAction: click(point='<point>200 300</point>')", HD) == approx(
        [(200 * 1920 / 1932, 300 * 1080 / 1092)])
    # ... and the box-token form on a 224x224 image. UI-TARS' min_pixels (100*28*28)
    # upscales 224x224 to 280x280, so (112, 224) is (89.6, 179.2) on the observation.
    text = "Thought: test\nAction: click(start_box='<|box_start|>(112,224)<|box_end|>')"
    assert fam.resize_for((224, 224)) == (280, 280)
    assert fam.parse(text, (224, 224)) == approx([(89.6, 179.2)])


def test_ui_tars_v1_relative_1000():
    # The same action text read as UI-TARS v1 (Qwen2-VL based): "qwen2vl output relative
    # coordinates", divided by factor=1000 (bytedance/UI-TARS codes/ui_tars/action_parser.py).
    fam = get_family("ui-tars")
    text = "Action: click(start_box='<|box_start|>(112,224)<|box_end|>')"
    assert fam.parse(text, HD) == approx([(215.04, 241.92)])
    # The one-point grounding query answers a bare tuple.
    assert fam.parse("(500,250)", HD) == approx([(960.0, 270.0)])


def test_ui_tars_ignores_coordinates_in_the_thought():
    text = "Thought: the icon at (10,10) is greyed out, use the one below.\nAction: click(start_box='(500,500)')"
    assert get_family("ui-tars").parse(text, (1000, 1000)) == approx([(500.0, 500.0)])


def test_os_atlas_model_card_example():
    # OS-Atlas-Base-7B model card (copied in aptsunny/MobileAgent
    # Mobile-Agent-v2/projects/xml2grounding/test_model_v4.py): box in [0,1000), centre (584, 27).
    text = ("<|object_ref_start|>language switch<|object_ref_end|>"
            "<|box_start|>(576,12),(592,42)<|box_end|><|im_end|>")
    assert get_family("os-atlas-base").parse(text, HD) == approx([(584 / 1000 * 1920, 27 / 1000 * 1080)])


def test_qwen2_vl_screenspot_pro_output():
    # woodhalloween/ScreenSpot-Pro-GUI-Grounding results/qwen2vl.json ("use zoom tool in Quartus
    # toolbar"), pred [1176.96, 259.2] on a 1920x1080 screenshot.
    text = ("<|object_ref_start|>use zoom tool in Quartus toolbar<|object_ref_end|>"
            "<|box_start|>(601,230),(625,250)<|box_end|><|im_end|>")
    fam = get_family("qwen2-vl")
    assert fam.parse(text, HD) == approx([(1176.96, 259.2)])
    # The same answer decoded with skip_special_tokens=True: the corners stay one box.
    assert fam.parse("use zoom tool in Quartus toolbar(601,230),(625,250)", HD) == approx([(1176.96, 259.2)])


def test_qwen25_vl_mobile_agent_cookbook():
    # QwenLM/Qwen3-VL cookbooks/mobile_agent.ipynb (Qwen2.5-VL-7B): the prompt states "The
    # screen's resolution is 1092x2408" (smart_resize of a 1080x2400 phone screenshot) and the
    # model answers in pixels of that image.
    fam = get_family("qwen2.5-vl")
    assert fam.resize_for((1080, 2400)) == (1092, 2408)
    text = ('<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [935, 406]}}\n'
            "</tool_call>")
    assert fam.parse(text, (1080, 2400)) == approx([(935 * 1080 / 1092, 406 * 2400 / 2408)])


def test_qwen25_vl_bbox_json():
    # Qwen2.5-VL grounding JSON, absolute pixels (example of SalemAlNasi/Qwen3-VL
    # qwen-vl-finetune/GROUNDING_DATA_FORMAT.md); the click is the box centre (575.5, 393).
    text = '{"bbox_2d": [135, 114, 1016, 672], "label": "house"}'
    assert get_family("qwen2.5-vl").parse(text, HD) == approx([(575.5 * 1920 / 1932, 393 * 1080 / 1092)])


def test_qwen25_vl_small_budget():
    fam = get_family("qwen2.5-vl").with_pixels(max_pixels=SMALL)        # sends 1316x728
    text = ('<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
            '"coordinate": [658, 364]}}\n</tool_call>')
    assert fam.parse(text, HD) == approx([(960.0, 540.0)])


def test_qwen3_vl_point_list_is_top_k():
    # Qwen3-VL point grounding, relative [0,1000] (SalemAlNasi/Qwen3-VL
    # qwen-vl-finetune/GROUNDING_DATA_FORMAT.md): two points, in the model's order.
    text = '[{"point_2d": [346, 328], "label": "person"}, {"point_2d": [238, 158], "label": "person"}]'
    assert get_family("qwen3-vl").parse(text, HD) == approx([(664.32, 354.24), (456.96, 170.64)])


def test_uground_v1_tuple():
    # UGround-V1 answers "(x, y)" in [0,1000) (OSU-NLP-Group/UGround
    # grounding/uground_qwen2vl_serve.py: x_ratio / 1000 * width). Not a logged output.
    assert get_family("uground-v1").parse("(512, 488)", HD) == approx([(983.04, 527.04)])


def test_aguvis_screenspot_pro_outputs():
    # ZeonLap/ScreenSpot-Pro-GUI-Grounding results/aguvis.json (3840x1080 screenshots):
    # raw_response -> pred.
    fam = get_family("aguvis")
    size = (3840, 1080)
    assert fam.parse("pyautogui.click(x=0.1175, y=0.0725)", size) == approx([(451.2, 78.3)])
    assert fam.parse("pyautogui.click(x=0.547, y=0.072)", size) == approx([(2100.48, 77.76)])


def test_cogagent_action_space_example():
    # THUDM/CogAgent Action_space_en.md: box [[387,248,727,317]] in 000-999 of each side;
    # the operation position is its centre (557, 282.5).
    text = ("Action: Click the title box.\nGrounded Operation:CLICK(box=[[387,248,727,317]], "
            "element_type='Clickable text', element_info='Click to add Title')")
    assert get_family("cogagent").parse(text, HD) == approx([(1069.44, 305.1)])
    # three-digit zero-padded values ("000,086,999,932" in the same document)
    assert get_family("cogagent").parse("SCROLL_DOWN(box=[[000,086,999,932]], step_count=5)", (1000, 1000)) == \
        approx([(499.5, 509.0)])


def test_seeclick_readme_example():
    # njucckevin/SeeClick readme.md: "add an event" -> "(0.17,0.06)"; a box "(left, top,
    # right, down)" is read as its centre.
    fam = get_family("seeclick")
    assert fam.parse("(0.17,0.06)", HD) == approx([(326.4, 64.8)])
    assert fam.parse("(0.10,0.20,0.30,0.40)", (1000, 1000)) == approx([(200.0, 300.0)])


@pytest.mark.parametrize("name", ["gpt-4o", "gpt-5"])
def test_gpt_pixel_answers(name):
    # MedSPOT's GPT prompt asks for "(x,y)" integer pixels (Tajamul21/MedSPOT
    # Evaluation_scripts/evaluate_gpt5.py); JSON answers are read too.
    fam = get_family(name)
    assert fam.parse("(812,44)", HD) == [(812.0, 44.0)]
    assert fam.parse("The button is at (812, 44).", HD) == [(812.0, 44.0)]
    assert fam.parse('```json\n{"x": 812, "y": 44}\n```', HD) == [(812.0, 44.0)]
    assert fam.parse('{"coordinates": [812, 44]}', HD) == [(812.0, 44.0)]


def test_openai_computer_call():
    # A Responses-API computer_call item with the fields of ResponseComputerToolCall (OpenAI
    # API reference; openai-agents-js ComputerUseCallItem); ids and values illustrative.
    # Pixels of the display declared in the tool (= the image as sent).
    fam = get_family("openai-computer-use")
    item = {"type": "computer_call", "id": "cu_67cc", "call_id": "call_zw3",
            "action": {"type": "click", "button": "left", "x": 156, "y": 50},
            "pending_safety_checks": [], "status": "completed"}
    assert fam.parse(json.dumps(item), (1024, 768)) == [(156.0, 50.0)]
    # The batched form of the newer "computer" tool: "actions": [{"type": "click", "x": 405,
    # "y": 157}, {"type": "type", "text": "penguin"}] (example quoted from OpenAI's computer-use
    # documentation by rkalani1.github.io/agent-builder-field-guide/browser-use/openai/).
    batched = {"type": "computer_call", "call_id": "c1",
               "actions": [{"type": "click", "x": 405, "y": 157}, {"type": "type", "text": "penguin"}]}
    assert fam.parse(json.dumps(batched), (1024, 768)) == [(405.0, 157.0)]
    # A screenshot request has no point.
    assert fam.parse('{"type": "computer_call", "action": {"type": "screenshot"}}', (1024, 768)) == []


# --- round trips ------------------------------------------------------------------------

def interior_points(size):
    w, h = size
    return [(0.0, 0.0), (w * 0.137, h * 0.861), (w / 2, h / 3), (w * 0.93, h * 0.07), (12.0, h - 40.0)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("size", SIZES)
def test_round_trip(name, size):
    """format_answer -> parse returns each point within max(1 px, half the family's step):
    1000-relative families have steps of size/1000 (3.84 px on 3840 wide), SeeClick's two
    decimals size/100, pixel families about 1 px of the sent image."""
    for fam in budgets(get_family(name)):
        points = interior_points(size)
        back = fam.parse(fam.format_answer(points, size), size)
        qx, qy = fam.quantum(size)
        assert len(back) == len(points), (fam.resize, fam.format_answer(points, size))
        for (x, y), (bx, by) in zip(points, back, strict=True):
            assert abs(bx - x) <= max(1.0, qx / 2) + 1e-9, (fam.name, fam.resize, size, x, bx)
            assert abs(by - y) <= max(1.0, qy / 2) + 1e-9, (fam.name, fam.resize, size, y, by)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("size", SIZES)
def test_round_trip_far_edge_stays_inside(name, size):
    """The last pixel (w-1, h-1) comes back inside the image (rounded down when rounding
    to nearest would leave it), within one step."""
    for fam in budgets(get_family(name)):
        corner = (size[0] - 1.0, size[1] - 1.0)
        (bx, by), = fam.parse(fam.format_answer([corner], size), size)
        qx, qy = fam.quantum(size)
        assert bx <= size[0] - 1 and by <= size[1] - 1
        assert corner[0] - bx <= max(1.0, qx) and corner[1] - by <= max(1.0, qy)


@pytest.mark.parametrize("name", NAMES)
def test_top_k_order(name):
    fam = get_family(name)
    points = [(1500.0, 900.0), (100.0, 50.0), (960.0, 540.0)]
    back = fam.parse(fam.format_answer(points, HD), HD)
    assert len(back) == 3
    for (x, y), (bx, by) in zip(points, back, strict=True):     # same order, best first
        assert math.hypot(bx - x, by - y) < 20


def test_quantum_values():
    assert get_family("qwen2-vl").quantum((3840, 2160)) == pytest.approx((3.84, 2.16))
    assert get_family("seeclick").quantum(HD) == pytest.approx((19.2, 10.8))
    assert get_family("aguvis").quantum(HD) == pytest.approx((0.192, 0.108))
    assert get_family("ui-tars-1.5").quantum(HD) == pytest.approx((1920 / 1932, 1080 / 1092))
    assert get_family("gpt-5").quantum(HD) == (1.0, 1.0)


def test_native_answer_texts():
    assert get_family("ui-tars-1.5").format_answer([(960, 540)], HD) == "Action: click(start_box='(966,546)')"
    assert get_family("cogagent").format_answer([(96, 540)], HD) == (
        "Action: Click the target element.\nGrounded Operation:CLICK(box=[[045,495,055,505]], "
        "element_type='Clickable text', element_info='target')")
    assert get_family("os-atlas-base").format_answer([(0, 540)], HD) == "<|box_start|>(0,495),(0,505)<|box_end|>"
    assert get_family("seeclick").format_answer([(326.4, 64.8)], HD) == "(0.17,0.06)"
    assert get_family("aguvis").format_answer([(451.2, 78.3)], (3840, 1080)) == "pyautogui.click(x=0.1175, y=0.0725)"
    assert get_family("uground-v1").format_answer([(983.04, 527.04)], HD) == "(512, 488)"
    call = json.loads(get_family("openai-computer-use").format_answer([(156, 50)], (1024, 768)))
    assert call["type"] == "computer_call" and call["action"] == {"type": "click", "button": "left", "x": 156, "y": 50}


# --- think blocks, junk, outside points --------------------------------------------------

def test_strip_think():
    assert strip_think("<think>at (1,2)</think>answer (3,4)").strip() == "answer (3,4)"
    assert strip_think("answer (3,4)<think>maybe (1,2)").strip() == "answer (3,4)"
    assert strip_think("thinking about (1,2)</think>\nanswer (3,4)").strip() == "answer (3,4)"
    assert strip_think("<THINK>a</THINK>b <think>c</think> d").split() == ["b", "d"]


@pytest.mark.parametrize("name", NAMES)
def test_think_blocks_are_not_parsed(name):
    fam = get_family(name)
    answer = fam.format_answer([(960, 540)], HD)
    decoy = fam.format_answer([(100, 100)], HD)
    # closed block before the answer
    (x, y), = fam.parse(f"<think>first I considered {decoy}</think>\n{answer}", HD)
    assert abs(x - 960) < 20 and abs(y - 540) < 20
    # unclosed block: everything after it is thought
    assert fam.parse(f"<think>I guess {decoy}", HD) == []
    (x, y), = fam.parse(f"{answer}\n<think>or rather {decoy}", HD)
    assert abs(x - 960) < 20


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("text", ["", "I cannot find that element on the screen.", "click(", "(12)",
                                  "Action: finished(content='done')", '{"x": "a", "y": "b"}'])
def test_unparsable_is_empty(name, text):
    assert get_family(name).parse(text, HD) == []


@pytest.mark.parametrize("name, text", [
    ("qwen2.5-vl", '{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1932, 10]}}'),
    ("ui-tars-1.5", "Action: click(start_box='(1932,10)')"),
    ("ui-tars", "(1000,500)"),
    ("uground-v1", "(-5, 500)"),
    ("qwen3-vl", '[{"point_2d": [1000, 1000]}]'),
    ("qwen2-vl", "<|box_start|>(990,10),(1010,30)<|box_end|>"),
    ("seeclick", "(1.20,0.50)"),
    ("aguvis", "pyautogui.click(x=1.0, y=0.5)"),
    ("cogagent", "CLICK(box=[[-10,0,-2,8]])"),
    ("gpt-4o", "(1920,540)"),
    ("gpt-5", "(812,-3)"),
    ("openai-computer-use", '{"type": "computer_call", "action": {"type": "click", "x": 2000, "y": 10}}'),
])
def test_outside_point_is_no_prediction(name, text):
    """Never clamped: an answer outside the image gives no point at all."""
    assert get_family(name).parse(text, HD) == []


def test_outside_point_is_dropped_from_top_k():
    text = '[{"point_2d": [1200, 10]}, {"point_2d": [500, 500]}]'
    assert get_family("qwen3-vl").parse(text, HD) == [(960.0, 540.0)]


# --- prompts ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_prompt_shape(name):
    fam = get_family(name)
    instruction = "Click on 'Delete this study'."
    prompt = fam.build_messages(instruction, HD, URL)
    assert prompt.image_size == fam.resize_for(HD)
    images = [part for m in prompt.messages if isinstance(m["content"], list)
              for part in m["content"] if part["type"] == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"] == URL
    texts = [m["content"] if isinstance(m["content"], str) else
             " ".join(p["text"] for p in m["content"] if p["type"] == "text") for m in prompt.messages]
    assert any(instruction in t for t in texts)
    assert {m["role"] for m in prompt.messages} <= {"system", "user"}
    assert prompt.messages[-1]["role"] == "user"
    json.dumps(prompt.messages)                       # serialisable as a request body


def test_prompt_specifics():
    q = get_family("qwen2.5-vl").build_messages("x", HD, URL)
    assert "The screen's resolution is 1932x1092." in q.messages[0]["content"]
    q_small = get_family("qwen2.5-vl").with_pixels(max_pixels=SMALL).build_messages("x", HD, URL)
    assert "The screen's resolution is 1316x728." in q_small.messages[0]["content"]
    a = get_family("aguvis").build_messages("x", HD, URL)
    assert a.prefill == "<|recipient|>all\n" and a.messages[0]["role"] == "system"
    assert all(get_family(n).build_messages("x", HD, URL).prefill is None for n in NAMES if n != "aguvis")
    g = get_family("gpt-5").build_messages("Open the study.", (1280, 800), URL)
    assert "width=1280, height=800" in g.messages[0]["content"][0]["text"]
    cu = get_family("openai-computer-use").build_messages("x", (1280, 800), URL)
    assert cu.api == "responses"
    assert cu.tools == [{"type": "computer_use_preview", "display_width": 1280, "display_height": 800,
                         "environment": "linux"}]
    t = get_family("ui-tars-1.5").build_messages("Open the study.", HD, URL)
    assert t.messages[0]["content"][0]["text"].endswith("## User Instruction\nOpen the study.")
    c = get_family("cogagent").build_messages("Open the study.", HD, URL)
    assert c.messages[0]["content"][1]["text"] == (
        "Task: Open the study.\nHistory steps: \n(Platform: WIN)\n(Answer in Action-Operation format.)")
