"""Runs the firewall's privileged commands: an argument list, an optional prefix, stdin, a timeout.

Never a shell. Owns turning a failed, missing or hung command into a FirewallError; it
must not know what the commands do.
"""

import dataclasses
import logging
import os
import shlex
import subprocess
from collections.abc import Sequence

from inspector.errors import ConfigError, FirewallError

LOG = logging.getLogger(__name__)

#: Seconds a firewall command may take unless the runner says otherwise.
DEFAULT_TIMEOUT = 30.0
#: Characters of stderr kept in an error message (iptables can print a whole batch).
_STDERR_LIMIT = 2000


def parse_prefix(text: str, option: str = "[pxe_filter] root_helper") -> tuple[str, ...]:
    """`sudo -n` -> ("sudo", "-n"); raises ConfigError naming `option` if it cannot be split."""
    try:
        return tuple(shlex.split(text or ""))
    except ValueError as exc:
        raise ConfigError(f"{option}: cannot split {text!r} into arguments: {exc}") from exc


@dataclasses.dataclass(frozen=True)
class Runner:
    """Runs `prefix + argv` without a shell; `prefix` is e.g. ("sudo", "-n") or
    ("ip", "netns", "exec", "NAME"), empty to run the command directly (as root)."""

    prefix: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT

    def run(
        self, argv: Sequence[str], *, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run and wait. With `check`, a non-zero exit raises FirewallError with stderr.

        A missing binary or a time-out raises FirewallError whatever `check` says.
        """
        command = [*self.prefix, *argv]
        LOG.debug("running %s (%d bytes on stdin)", shlex.join(command), len(stdin or ""))
        try:
            result = subprocess.run(
                command,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
                # Error messages parsed by nobody but read by people: keep them in English.
                env={**os.environ, "LC_ALL": "C"},
            )
        except FileNotFoundError as exc:
            raise FirewallError(f"{shlex.join(command)}: {exc.strerror}: {command[0]}") from exc
        except PermissionError as exc:
            raise FirewallError(f"{shlex.join(command)}: {exc.strerror}") from exc
        except subprocess.TimeoutExpired as exc:
            raise FirewallError(
                f"{shlex.join(command)} timed out after {self.timeout:g} s"
            ) from exc
        if check and result.returncode != 0:
            raise FirewallError(describe_failure(command, result))
        return result


def describe_failure(command: Sequence[str], result: subprocess.CompletedProcess[str]) -> str:
    stderr = (result.stderr or "").strip() or (result.stdout or "").strip() or "no output"
    if len(stderr) > _STDERR_LIMIT:
        stderr = stderr[:_STDERR_LIMIT] + " ..."
    return f"{shlex.join(command)} failed with exit status {result.returncode}: {stderr}"
