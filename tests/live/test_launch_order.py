"""The order a reset starts a program's processes in, on real processes: each ready before
the next, except a `concurrent` one, which is waited for once every process has started."""
from __future__ import annotations

from pathlib import Path

import pytest
import requests

from clinigym.core.errors import WaitTimeout
from clinigym.runtime.backends import make_backend
from clinigym.spec.apps import _load

# A server that answers only once the process after it has started (it waits for that
# process's file), and that process.
SERVER = ("import http.server, os, time\n"
          "while not os.path.exists('started'): time.sleep(0.02)\n"
          "http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), "
          "http.server.SimpleHTTPRequestHandler).serve_forever()\n")


def program(tmp_path: Path, concurrent: bool) -> Path:
    folder = tmp_path / "lab"
    folder.mkdir()
    (folder / "app.yaml").write_text(
        "name: lab\ntitle: Lab\nports: [web]\nport_block: 18\nbackends: [local]\n"
        "processes:\n"
        f"  - {{name: server, command: [python3, -c, {SERVER!r}], env: {{PORT: '${{PORT_WEB}}'}},\n"
        f"     concurrent: {str(concurrent).lower()},\n"
        "     ready: {http: 'http://127.0.0.1:${PORT_WEB}/', timeout: 5}}\n"
        "  - {name: main, command: [sh, -c, 'touch started && exec xmessage -geometry +0+0 lab'],\n"
        "     ready: {window: ^xmessage, timeout: 10}}\n")
    return folder / "app.yaml"


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_concurrent_process_lets_the_next_start_and_is_ready_by_the_first_screen(tmp_path, concurrent):
    backend = make_backend(_load(program(tmp_path, concurrent)))
    try:
        if not concurrent:   # the server waits for the process that waits for the server
            with pytest.raises(WaitTimeout, match=r"lab/server: .*http://127\.0\.0\.1:\d+/ to answer"):
                backend.reset()
            return
        backend.reset()
        # Ready when the reset returns, not merely started.
        url = f"http://127.0.0.1:{backend.ports['web']}/"
        assert requests.get(url, timeout=1, proxies={"http": ""}).status_code == 200
        assert backend.dead() is None and backend.display.has_window("^xmessage")
    finally:
        backend.close()
