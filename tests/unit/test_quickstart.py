"""scripts/quickstart's refusals and its wait for Inspector, fast: the script runs from a
copy in a temporary checkout whose installer, services and `inspector` are stubs, so
nothing is installed and no service starts. (tests/e2e/test_bare_clone.py runs the real
thing.)"""

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Seconds a refusal may take: it comes before anything is installed.
REFUSAL_SECONDS = 10


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def executable(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def checkout(tmp_path) -> pathlib.Path:
    """A checkout with the real scripts/quickstart; scripts/bootstrap and scripts/services
    stubs that leave a mark when run; .venv/bin/python this interpreter. The test writes
    .venv/bin/inspector."""
    root = tmp_path / "inspector"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "quickstart", root / "scripts" / "quickstart")
    executable(root / "scripts" / "bootstrap", '#!/bin/sh\ntouch "$(dirname "$0")/../installed"\n')
    executable(
        root / "scripts" / "services",
        "#!/bin/sh\n"
        'case "$1" in\n'
        '    start) touch "$(dirname "$0")/../started-$2" ;;\n'
        "    env) echo export INSPECTOR_TEST_IRONIC_URL=http://127.0.0.1:9\n"
        "         echo export INSPECTOR_TEST_IRONIC_LOG=/nowhere/ironic.log ;;\n"
        "esac\n",
    )
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to(sys.executable)
    return root


def quickstart(checkout: pathlib.Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("INSPECTOR_")
    }
    environment.update(env)
    with subprocess.Popen(
        ["scripts/quickstart", *args],
        cwd=checkout,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=120)
        finally:
            # Whatever it left (a stub `inspector`): its whole group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


class Foreign(BaseHTTPRequestHandler):
    """Any HTTP server that is not Inspector: answers GET / with a page, refuses POST."""

    def do_GET(self):
        body = b"<html>a directory listing</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def foreign_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Foreign)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_foreign_server_on_inspectors_port_is_refused_before_any_install(checkout):
    with foreign_server() as port:
        started = time.monotonic()
        result = quickstart(
            checkout,
            "--non-interactive",
            INSPECTOR_PORT=str(port),
            INSPECTOR_IRONIC_PORT=str(free_port()),
        )
        took = time.monotonic() - started
    assert result.returncode == 1, result
    assert took < REFUSAL_SECONDS, result
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"quickstart: FAILED: 127.0.0.1:{port}, Inspector's port, is already")
    assert "INSPECTOR_PORT=" in line and "scripts/quickstart --non-interactive" in line
    assert result.stdout == ""
    # Nothing installed, started or written.
    assert sorted(p.name for p in checkout.iterdir()) == [".venv", "scripts"]


def test_a_foreign_server_on_ironics_port_is_refused_before_any_install(checkout):
    with foreign_server() as port:
        result = quickstart(
            checkout, INSPECTOR_PORT=str(free_port()), INSPECTOR_IRONIC_PORT=str(port)
        )
    assert result.returncode == 1, result
    (line,) = result.stderr.splitlines()
    assert f"127.0.0.1:{port}, Ironic's port, is taken" in line
    assert "INSPECTOR_IRONIC_PORT=" in line
    assert sorted(p.name for p in checkout.iterdir()) == [".venv", "scripts"]


def test_an_earlier_quickstarts_inspector_still_running_is_named(checkout):
    conf = checkout / ".data" / "inspector.conf"
    conf.parent.mkdir()
    conf.write_text("[DEFAULT]\nlisten_port = 5999\n")
    # A process whose command line names the checkout's configuration, as `inspector all
    # --config-file .../.data/inspector.conf` does; its pid in .data/inspector.pid.
    earlier = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "all", "--config-file", str(conf)]
    )
    try:
        (checkout / ".data" / "inspector.pid").write_text(f"{earlier.pid}\n")
        # Whatever port this run asks for: the earlier one shares .data/.
        result = quickstart(
            checkout, INSPECTOR_PORT=str(free_port()), INSPECTOR_IRONIC_PORT=str(free_port())
        )
    finally:
        earlier.kill()
        earlier.wait()
    assert result.returncode == 1, result
    (line,) = result.stderr.splitlines()
    assert "an earlier scripts/quickstart's Inspector is still running" in line
    assert f"pid {earlier.pid}, port 5999" in line and f"kill {earlier.pid}" in line
    assert not (checkout / "installed").exists()


def test_a_stale_pidfile_is_no_refusal(checkout):
    (checkout / ".data").mkdir()
    (checkout / ".data" / "inspector.pid").write_text(f"{os.getpid()}\n")  # not an Inspector
    executable(checkout / ".venv" / "bin" / "inspector", "#!/bin/sh\nexit 2\n")
    result = quickstart(
        checkout, INSPECTOR_PORT=str(free_port()), INSPECTOR_IRONIC_PORT=str(free_port())
    )
    assert (checkout / "installed").exists(), result
    assert "still running" not in result.stderr


def test_inspector_exiting_before_it_answers_is_said_with_its_log(checkout):
    executable(
        checkout / ".venv" / "bin" / "inspector",
        "#!/bin/sh\necho 'inspector: error: the reason it gave' >&2\nexit 2\n",
    )
    result = quickstart(
        checkout,
        "--non-interactive",
        INSPECTOR_PORT=str(free_port()),
        INSPECTOR_IRONIC_PORT=str(free_port()),
    )
    assert result.returncode == 1, result
    log = checkout / ".data" / "inspector.log"
    assert f"exited with status 2 before answering; the last lines of its log {log}" in (
        result.stderr
    )
    assert "the reason it gave" in result.stderr
    assert "Inspector is up" not in result.stdout
    assert "demo" not in result.stdout
    assert not (checkout / ".data" / "inspector.pid").exists()
    # The last line: Ironic is left running, and how to stop it.
    assert "'scripts/services stop ironic' stops it" in result.stdout.splitlines()[-1]


def test_an_answer_that_is_not_inspectors_is_no_inspector(checkout):
    # Its own child answers, but as another HTTP server would (another program started
    # between the port check and Inspector's bind would answer the same way).
    executable(
        checkout / ".venv" / "bin" / "inspector",
        f'#!/bin/sh\nexec {sys.executable} -m http.server --bind 127.0.0.1 "$INSPECTOR_PORT"\n',
    )
    port = free_port()
    result = quickstart(
        checkout,
        "--non-interactive",
        INSPECTOR_PORT=str(port),
        INSPECTOR_IRONIC_PORT=str(free_port()),
    )
    assert result.returncode == 1, result
    assert f"http://127.0.0.1:{port}/ answers, but not as Inspector does" in result.stderr
    assert "INSPECTOR_PORT" in result.stderr
    assert "Inspector is up" not in result.stdout
