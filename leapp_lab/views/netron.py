"""Optional: look at one exported model in Netron, inside a live notebook.

Netron is not leapp_lab's graph view and is never part of the offline report, because:

* it phones home: the page asks ipinfo.io where you are and sends Google Analytics events;
* without that answer it shows a blocking cookie/telemetry consent dialog (click Accept);
* its UI refuses to run ("Please update to the newest version.") 180 days after its build date.

``show_model(path)`` serves the file with the installed ``netron`` package on ``localhost`` (where
its consent cookie sticks) and embeds it with that notice. The iframe points at the kernel's
machine, so it works when the browser runs there too (a local Jupyter); for a remote server use
``jupyter-server-proxy`` and ``show_model(path, proxy=True)``.
"""
from __future__ import annotations

import datetime as _dt
import html
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path

AGE_LIMIT_DAYS = 180


def _netron():
    try:
        import netron
    except ImportError:
        raise ImportError("the Netron panel needs the optional 'netron' package: "
                          "pip install netron (or leapp-lab[netron])") from None
    return netron


def build_date() -> _dt.datetime | None:
    """The build date Netron's age check counts from (``<meta name="date">`` in its index.html)."""
    netron = _netron()
    index = Path(netron.__file__).with_name("index.html")
    try:
        m = re.search(r'<meta name="date" content="([0-9-]+ [0-9:]+)"', index.read_text(encoding="utf-8"))
    except OSError:
        return None
    return _dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") if m else None


def notice() -> str:
    d = build_date()
    expiry = f"on {(d + _dt.timedelta(days=AGE_LIMIT_DAYS)).date()}" if d else f"{AGE_LIMIT_DAYS} days after its build"
    return (f"Netron {_netron().__version__} (optional viewer, not part of leapp_lab's reports): it phones home "
            f"(ipinfo.io and Google Analytics), shows a consent dialog (click Accept), and stops working {expiry}, "
            f"{AGE_LIMIT_DAYS} days after its build date; then upgrade the netron package. "
            f"leapp_lab's own graph views need none of this.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class NetronPanel:
    """A served model; displays as the notice plus an iframe. ``stop()`` ends the server."""
    model: str
    host: str
    port: int
    url: str
    height: int = 600

    def _repr_html_(self) -> str:
        return (f'<div class="leapp-netron"><div style="background:#fff8e1;border-left:3px solid #ffb300;'
                f'padding:4px 8px;font-size:12px">{html.escape(notice())}</div>'
                f'<div style="font-size:11px;color:#757575">{html.escape(self.model)} · {html.escape(self.url)}</div>'
                f'<iframe src="{html.escape(self.url, quote=True)}" style="width:100%;height:{int(self.height)}px;'
                f'border:1px solid #e0e0e0" title="Netron"></iframe></div>')

    def __repr__(self) -> str:
        return f"NetronPanel({self.model!r} at {self.url}) — {notice()}"

    def stop(self, timeout_s: float = 5.0) -> None:
        netron = _netron()
        addr = (self.host, self.port)
        netron.stop(addr)
        deadline = time.time() + timeout_s       # netron.stop is asynchronous: wait for the port
        while netron.status(addr) and time.time() < deadline:
            time.sleep(0.05)


def show_model(path: str | os.PathLike, port: int | None = None, proxy: bool = False,
               height: int = 600) -> NetronPanel:
    """Serve ``path`` (an .onnx, .pt, ... file) with Netron and return a displayable panel."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such model file to show in Netron")
    netron = _netron()
    port = port or _free_port()
    host = "localhost"            # not 127.0.0.1: netron's consent cookie is rejected there
    netron.start(str(p), address=(host, port), browse=False)
    url = f"/proxy/{port}/" if proxy else f"http://{host}:{port}/"
    return NetronPanel(model=str(p), host=host, port=port, url=url, height=height)
