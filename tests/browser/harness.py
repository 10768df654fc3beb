"""Real-browser harness: an isolated JupyterLab server on a free localhost port and Debian's
Chromium through Playwright (``executable_path``; never ``playwright install``).

The Lab server also serves Notebook 7 (the ``notebook`` package registers its server extension),
so one server covers both front-ends.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
KERNEL_IDLE_JS = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!k && k.status === 'idle'; }"""


#: what an offline report may load: itself and what it carries inline
OFFLINE_SCHEMES = ("file:", "data:", "blob:", "about:")


def open_offline(page, path: Path, wait_for: str | None = None, timeout: float | None = None, *,
                 fragment: str = "", allow: tuple[str, ...] = OFFLINE_SCHEMES) -> list[str]:
    """Open a standalone report with every request but ``allow`` aborted; wait for ``wait_for``
    (``timeout`` ms, Playwright's default when None). Returns the list the aborted URLs are
    appended to (an offline report asks for none)."""
    blocked: list[str] = []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(allow)
               else (blocked.append(r.request.url), r.abort()))
    page.goto(Path(path).as_uri() + fragment)
    if wait_for is not None:
        page.wait_for_selector(wait_for, **({} if timeout is None else {"timeout": timeout}))
    return blocked


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_lab(root_dir: Path, workdir: Path, startup_timeout: float = 90):
    """Yields ``(base_url, token)``; the server is stopped by its own PID on exit."""
    port, token = free_port(), secrets.token_hex(16)
    iso = workdir / ".jupyter"
    for d in ("config", "runtime", "workspaces", "settings", "data"):
        (iso / d).mkdir(parents=True, exist_ok=True)
    ns = iso / "settings" / "@jupyterlab" / "apputils-extension"
    ns.mkdir(parents=True, exist_ok=True)
    # no "get notified about Jupyter news?" toast over the views
    (ns / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    bindir = Path(sys.executable).parent
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(iso / "config"), JUPYTER_RUNTIME_DIR=str(iso / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(iso / "workspaces"), JUPYTERLAB_SETTINGS_DIR=str(iso / "settings"),
               PATH=f"{bindir}:{os.environ.get('PATH', '')}", PYTHONUNBUFFERED="1")
    for attempt in range(3):
        # the free port may be taken by another process (another pytest-xdist worker's server) before
        # this one binds it: the server then exits at once, and the next attempt takes a new port
        port = port if attempt == 0 else free_port()
        cmd = [str(bindir / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0", "--allow-root",
               f"--ServerApp.root_dir={root_dir}", "--LabApp.expose_app_in_browser=True",
               "--JupyterNotebookApp.expose_app_in_browser=True",
               "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        log = open(workdir / "jupyter_lab.log", "w")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + startup_timeout
        while True:
            if proc.poll() is not None:
                log.close()
                if "already in use" in (workdir / "jupyter_lab.log").read_text() and attempt < 2:
                    break
                raise RuntimeError(f"jupyter lab exited with {proc.returncode}; see {log.name}")
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                break
            except Exception:
                if time.time() > deadline:
                    proc.kill()
                    log.close()
                    raise TimeoutError(f"jupyter lab did not answer within {startup_timeout}s; see {log.name}")
                time.sleep(0.2)
        if proc.poll() is None:
            break
    try:
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def open_notebook(page, base: str, token: str, nb: str, ui: str = "lab", timeout_ms: int = 90000) -> None:
    path = "lab/tree" if ui == "lab" else "notebooks"
    page.goto(f"{base}/{path}/{nb}?token={token}" + ("&reset" if ui == "lab" else ""))
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=timeout_ms)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=timeout_ms)


def run_all(page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def wait_text(page, text: str, timeout_ms: int) -> None:
    """Wait until a cell output contains ``text`` (the notebooks print a sentinel at the end)."""
    page.wait_for_function("t => [...document.querySelectorAll('.jp-OutputArea-output')]"
                           ".some(e => e.textContent.includes(t))", arg=text, timeout=timeout_ms)


def hist_state(page, scope: str, index: int = 0) -> dict:
    """What the histogram panel inside the ``index``-th match of ``scope`` shows: hooks and bars."""
    return page.evaluate("""([s, i]) => { const root = document.querySelectorAll(s)[i];
        const p = root.querySelector('[data-leapp-hist-row]');
        const bars = [...p.querySelectorAll('.trace.bars .point path')].map(e => e.getAttribute('d')).join('|');
        const title = (p.querySelector('.gtitle') || {}).textContent || '';
        return {row: p.getAttribute('data-leapp-hist-row'), sample: p.getAttribute('data-leapp-hist-sample'),
                bars, title, text: p.textContent}; }""", [scope, index])


def wait_hist(page, scope: str, row: str, sample: str | None = None, timeout_ms: int = 15000, index: int = 0) -> dict:
    """Wait until the histogram panel in ``scope`` shows ``row`` (and ``sample``) with its plot drawn."""
    page.wait_for_function("""([s, row, sample, i]) => { const root = document.querySelectorAll(s)[i];
        const p = root && root.querySelector('[data-leapp-hist-row]');
        if (!p || p.getAttribute('data-leapp-hist-row') !== row) return false;
        if (sample !== null && p.getAttribute('data-leapp-hist-sample') !== sample) return false;
        const t = p.querySelector('.gtitle');
        return !!t && t.textContent.includes(row) && p.querySelectorAll('.trace.bars .point path').length > 0; }""",
                           arg=[scope, row, sample, index], timeout=timeout_ms)
    return hist_state(page, scope, index)


def run_cell(page, index: int) -> None:
    """Run one cell (negative index: from the end) through the front-end's own command."""
    page.evaluate("""i => { const nb = window.jupyterapp.shell.currentWidget.content;
        nb.activeCellIndex = i < 0 ? nb.widgets.length + i : i;
        return window.jupyterapp.commands.execute('notebook:run-cell'); }""", index)
