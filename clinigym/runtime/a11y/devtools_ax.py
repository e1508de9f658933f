"""The Chromium reader: the front page's accessibility tree through DevTools
(``Accessibility.getFullAXTree`` per frame), with boxes from one ``DOMSnapshot`` joined on
the DOM node ids, moved by the window's offset on the screen and by each frame's position.

Nodes Chromium marks ignored are left out (their children hang from the nearest kept
ancestor); roles are Chromium's ARIA roles ("button", "link", "StaticText"); a property
that is true (focusable, focused, expanded, ...) is a state.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from clinigym.core.elements import Caps, Raw, Tree, assemble
from clinigym.core.geometry import Box
from clinigym.runtime.browser import DevTools

__all__ = ["DevToolsAxReader"]

# Where the page's viewport is on the screen (as browser.py's element boxes place it).
_OFFSET_JS = ("[window.screenX + (window.outerWidth - window.innerWidth) / 2,"
              " window.screenY + (window.outerHeight - window.innerHeight), window.devicePixelRatio]")
_TRISTATE = {"true": None, "mixed": "indeterminate"}   # checked/pressed: "true" -> the property's name


class DevToolsAxReader:
    source = "devtools"

    def __init__(self, client: Callable[[], DevTools]):
        self.client = client   # the backend's, connected anew after each reset

    def close(self) -> None:
        """The DevTools client is the backend's: nothing to close here."""

    def read(self, caps: Caps = Caps(), screen: tuple[int, int] | None = None) -> Tree:
        start = time.monotonic()
        call = self.client().call
        frames = _frames(call("Page.getFrameTree")["frameTree"])
        snapshot = call("DOMSnapshot.captureSnapshot", {"computedStyles": [], "includeDOMRects": True})
        ox, oy, ratio = call("Runtime.evaluate", {"expression": _OFFSET_JS, "returnByValue": True})["result"]["value"]
        boxes = _boxes(snapshot, ox, oy, ratio)
        raws: list[Raw] = []
        hit = set()
        keys: dict[int, str] = {}   # backend DOM node id -> its element's key (an <iframe>'s, for its frame)
        for i, frame_id in enumerate(frames):
            if time.monotonic() - start > caps.seconds:
                hit.add("time")
                break
            parent = None
            if i:   # a child frame hangs from its <iframe>'s element
                parent = keys.get(call("DOM.getFrameOwner", {"frameId": frame_id}).get("backendNodeId", -1))
            nodes = call("Accessibility.getFullAXTree", {"frameId": frame_id} if i else {})["nodes"]
            raws += _raws(nodes, boxes, f"{frame_id}:", parent, keys)
        if time.monotonic() - start > caps.seconds:
            hit.add("time")
        return assemble(raws, caps, screen, hit, self.source)


def _frames(tree: dict[str, Any]) -> list[str]:
    """Frame ids, the main frame first, then children depth first."""
    out = [tree["frame"]["id"]]
    for child in tree.get("childFrames", []):
        out += _frames(child)
    return out


def _boxes(snapshot: dict[str, Any], ox: float, oy: float, ratio: float) -> dict[int, Box]:
    """Screen boxes by backend DOM node id. A document's layout bounds are in its own
    coordinates: a frame's document is moved by its <iframe>'s position, and by its scroll."""
    docs = snapshot["documents"]
    origin: dict[int, tuple[float, float]] = {0: (ox, oy)}
    out: dict[int, Box] = {}
    for d, doc in enumerate(docs):
        x0, y0 = origin.get(d, (ox, oy))
        x0 -= doc.get("scrollOffsetX", 0)
        y0 -= doc.get("scrollOffsetY", 0)
        ids = doc["nodes"]["backendNodeId"]
        content = doc["nodes"].get("contentDocumentIndex", {"index": [], "value": []})
        inner = dict(zip(content["index"], content["value"]))
        for node, (x, y, w, h) in zip(doc["layout"]["nodeIndex"], doc["layout"]["bounds"]):
            out[ids[node]] = Box((x0 + x) * ratio, (y0 + y) * ratio, (x0 + x + w) * ratio, (y0 + y + h) * ratio)
            if node in inner:
                origin[inner[node]] = (x0 + x, y0 + y)
    return out


def _states(node: dict[str, Any]) -> frozenset[str]:
    states = set()
    for prop in node.get("properties", []):
        value = prop.get("value", {}).get("value")
        if value is True:
            states.add(prop["name"].lower())
        elif isinstance(value, str) and value in _TRISTATE:
            states.add(_TRISTATE[value] or prop["name"].lower())
    return frozenset(states)


def _text(node: dict[str, Any], key: str) -> str:
    value = (node.get(key) or {}).get("value")
    return "" if value is None else str(value)


def _raws(nodes: list[dict[str, Any]], boxes: dict[int, Box], prefix: str, parent: str | None,
          keys: dict[int, str]) -> list[Raw]:
    """The frame's kept nodes, depth first from its root, each with its nearest kept ancestor
    (`parent` for the frame's root); `keys` gets their DOM node ids."""
    by_id = {n["nodeId"]: n for n in nodes}
    roots = [n for n in nodes if not n.get("parentId") or n["parentId"] not in by_id]
    out: list[Raw] = []
    stack: list[tuple[dict[str, Any], str | None]] = [(n, parent) for n in reversed(roots)]
    while stack:
        node, up = stack.pop()
        key = up
        if not node.get("ignored"):
            key = prefix + node["nodeId"]
            dom = node.get("backendDOMNodeId")
            if dom is not None:
                keys.setdefault(dom, key)
            out.append(Raw(key, up, _text(node, "role"), _text(node, "name"), _text(node, "description"),
                           _states(node), _text(node, "value") or None, boxes.get(dom) if dom is not None else None))
        for child in reversed(node.get("childIds", [])):
            if child in by_id:
                stack.append((by_id[child], key))
    return out
