"""http_basic auth's user table: an htpasswd file of bcrypt hashes and roles, reloaded on change.

Checks passwords and says which roles a user has; deciding what those roles allow is policy.py's.
"""

import dataclasses
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence

import bcrypt

from inspector.errors import ConfigError

LOG = logging.getLogger(__name__)

#: The bcrypt variants that `htpasswd -B` and the bcrypt library write ($2x$ is a broken one).
BCRYPT_HASH = re.compile(r"^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$")

#: bcrypt reads only this many bytes of a password; older bcrypt releases and Apache's
#: htpasswd truncated silently, bcrypt>=5 raises, so we truncate as the hash's maker did.
BCRYPT_MAX_PASSWORD_BYTES = 72

#: Checked when the user is unknown, so that the answer takes as long as for a known user
#: and response times do not tell which user names exist.
DUMMY_HASH = b"$2b$12$qQMClvz2syakTSmMlfgkmOTMP0mgQLF0xsYUfM0b8H4aw5Fo2ruZO"

HINT = "create it with `htpasswd -B` (bcrypt)"


@dataclasses.dataclass(frozen=True)
class User:
    name: str
    password_hash: bytes
    roles: tuple[str, ...]
    #: False when the line had no roles field and got [http_basic] default_roles.
    explicit_roles: bool


def _parse_line(line: str, where: str, default_roles: Sequence[str]) -> User:
    fields = line.split(":")
    if len(fields) not in (2, 3) or not fields[0]:
        # Never echo the line: it holds a password hash.
        raise ConfigError(f"{where}: expected user:bcrypt-hash[:role,role...]; {HINT}")
    name, password_hash = fields[0], fields[1]
    if not BCRYPT_HASH.match(password_hash):
        raise ConfigError(
            f"{where}: the password hash of user {name!r} is not a bcrypt hash "
            f"(only $2a$, $2b$ and $2y$ are accepted); {HINT}"
        )
    roles = [r.strip() for r in fields[2].split(",")] if len(fields) == 3 else []
    roles = [r for r in roles if r]
    return User(
        name=name,
        password_hash=password_hash.encode("ascii"),
        roles=tuple(roles or default_roles),
        explicit_roles=bool(roles),
    )


def parse(text: str, path: str, default_roles: Sequence[str]) -> dict[str, User]:
    """Users by name. Blank lines and lines starting with # are skipped.

    Raises ConfigError naming the file and line of the first problem.
    """
    users: dict[str, User] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user = _parse_line(line, f"{path}, line {number}", default_roles)
        if user.name in users:
            raise ConfigError(f"{path}, line {number}: user {user.name!r} is listed twice")
        users[user.name] = user
    return users


def _signature(st: os.stat_result) -> tuple[int, int, int]:
    # The inode catches an atomic rename over the file, the size an edit within one mtime tick.
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class UserFile:
    """The users of one htpasswd file, reloaded when its mtime, size or inode changes.

    A file that cannot be read or parsed at start-up is a ConfigError. Later, a broken
    edit is logged and the previous users stay in force until the file changes again, so
    that a half-written file does not lock every caller out.
    """

    def __init__(
        self,
        path: str,
        default_roles: Sequence[str],
        *,
        stat: Callable[[str], os.stat_result] = os.stat,
    ) -> None:
        self.path = path
        self._default_roles = tuple(default_roles)
        self._stat = stat
        self._lock = threading.Lock()
        try:
            self._seen: tuple[int, int, int] | None = _signature(stat(path))
            self._users = self._read()
        except OSError as exc:
            raise ConfigError(
                f"cannot read [DEFAULT] http_basic_auth_user_file {path}: {exc.strerror or exc}"
            ) from exc

    def _read(self) -> dict[str, User]:
        try:
            with open(self.path, encoding="utf-8") as stream:
                text = stream.read()
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{self.path}: not UTF-8 text") from exc
        users = parse(text, self.path, self._default_roles)
        for user in users.values():
            if not user.explicit_roles:
                LOG.warning(
                    "User %s in %s has no roles field and gets [http_basic] default_roles "
                    "(%s); write them on its line (user:hash:role,...) to grant less",
                    user.name,
                    self.path,
                    ",".join(user.roles),
                )
        if not users:
            LOG.warning("%s lists no users: every protected request will be refused", self.path)
        LOG.info("Loaded %d users from %s", len(users), self.path)
        return users

    def refresh(self) -> None:
        """Reload the file if it changed since the last look (one stat when it did not)."""
        try:
            seen = _signature(self._stat(self.path))
        except OSError as exc:
            seen = None
            error: Exception | None = exc
        else:
            error = None
        if seen == self._seen:
            return
        with self._lock:
            if seen == self._seen:  # another thread reloaded it meanwhile
                return
            self._seen = seen
            if error is None:
                try:
                    self._users = self._read()
                    return
                except (OSError, ConfigError) as exc:
                    error = exc
            LOG.error(
                "Cannot reload %s, keeping the %d users loaded before: %s",
                self.path,
                len(self._users),
                error,
            )

    def authenticate(self, name: str, password: str) -> User | None:
        """The user if the password matches its hash, else None."""
        self.refresh()
        user = self._users.get(name)
        secret = password.encode("utf-8")[:BCRYPT_MAX_PASSWORD_BYTES]
        try:
            matches = bcrypt.checkpw(secret, user.password_hash if user else DUMMY_HASH)
        except ValueError:
            LOG.exception("Cannot check the password of user %s against its hash", name)
            return None
        return user if matches and user is not None else None
