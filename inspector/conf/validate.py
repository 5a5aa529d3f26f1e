"""Start-up validation: read every option once and turn oslo.config's errors into one clear message.

Also the checks that span options or only warn (a time-out above the design's bound).
"""

import logging
import re
from collections.abc import Iterable

from oslo_config import cfg, types

from inspector.conf.default import DESIGN_MAX_TIMEOUT
from inspector.errors import ConfigError

LOG = logging.getLogger(__name__)

_REASON = re.compile(r"is not valid: (?P<reason>.*)$", re.S)
_SOURCE = re.compile(r"detail='(?P<source>[^']+)'")


def describe_range(opt: cfg.Opt) -> str:
    """Human text for what an option accepts, e.g. 'a number from 0 to 30'."""
    kind = opt.type
    if isinstance(kind, types.Integer | types.Float):
        noun = "an integer" if isinstance(kind, types.Integer) else "a number"
        low, high = kind.min, kind.max
        if low is not None and high is not None:
            return f"{noun} from {low} to {high}"
        if low is not None:
            return f"{noun} >= {low}"
        if high is not None:
            return f"{noun} <= {high}"
        return noun
    choices = getattr(kind, "choices", None)
    if choices:
        return "one of " + ", ".join(str(c) for c in choices)
    return str(kind)


def _option_name(group: str, opt: cfg.Opt) -> str:
    name = f"[{group}] {opt.name}"
    aliases = [f"[{d.group or group}] {d.name}" for d in opt.deprecated_opts if d.name]
    if aliases:
        name += f" (or its old name {', '.join(aliases)})"
    return name


def _check(conf: cfg.ConfigOpts, group: str, opt: cfg.Opt) -> str | None:
    try:
        if group == "DEFAULT":
            getattr(conf, opt.dest)
        else:
            getattr(conf[group], opt.dest)
    except (cfg.ConfigFileValueError, ValueError) as exc:
        text = str(exc)
        reason = _REASON.search(text)
        source = _SOURCE.search(text)
        message = f"{_option_name(group, opt)}: {reason['reason'] if reason else text}"
        message += f"; it must be {describe_range(opt)}"
        if source:
            message += f" (set in {source['source']})"
        return message
    return None


def validate(conf: cfg.ConfigOpts, groups: Iterable[tuple[str, list[cfg.Opt]]]) -> None:
    """Read every option of `groups`; raise ConfigError listing every invalid one."""
    problems = []
    for group_name, group_opts in groups:
        for opt in group_opts:
            problem = _check(conf, group_name, opt)
            if problem:
                problems.append(problem)
    problems.extend(_cross_checks(conf))
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
    # Only when [DEFAULT] timeout is registered (not by `load_groups`).
    if "timeout" in conf and conf.timeout > DESIGN_MAX_TIMEOUT:
        LOG.warning(
            "[DEFAULT] timeout = %s s is above the design's bound of %s s: a node that "
            "never boots keeps its introspection (and its firewall opening) that long",
            conf.timeout,
            DESIGN_MAX_TIMEOUT,
        )


def _cross_checks(conf: cfg.ConfigOpts) -> list[str]:
    """Problems that involve more than one option."""
    problems = []
    group = getattr(conf, "notifications", None)
    if group is not None and "http" in group.drivers and not group.http_endpoint:
        problems.append(
            "[notifications] drivers includes http, so [notifications] http_endpoint must be set"
        )
    return problems
