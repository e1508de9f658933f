"""The OCR grounding agent (extra `ocr`): `text` (reading instructions, comparing texts),
`matching` (grounding an intent on OCR boxes and icons), `icons` (icon crops), `agent`
(RapidOCR and the agent)."""
from clinigym.agents.ocr.agent import OcrAgent, run_ocr
from clinigym.agents.ocr.icons import Icon, IconLibrary, icon_folders
from clinigym.agents.ocr.matching import CONTENT_THRESHOLD, Candidate, Decision, ground, match_label, match_words
from clinigym.agents.ocr.text import Intent, TextBox, normalize, parse_instruction, similarity

__all__ = ["CONTENT_THRESHOLD", "Candidate", "Decision", "Icon", "IconLibrary", "Intent", "OcrAgent", "TextBox",
           "ground", "icon_folders", "match_label", "match_words", "normalize", "parse_instruction", "run_ocr",
           "similarity"]
