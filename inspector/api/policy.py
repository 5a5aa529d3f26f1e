"""API access (oslo.policy): the check of credentials against the rules, our defaults
(inspector.api.policy_rules, ironic-inspector's names) overridden by the operator's file.

Decides what credentials may do; who the caller is comes from auth.py. Unknown rules deny.
The defaults are ironic-inspector 12.5's secure RBAC ones; each keeps its old role rule as
an oslo.policy DeprecatedRule, honoured too under [oslo_policy] enforce_new_defaults = false.
"""

import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from oslo_config import cfg
from oslo_policy import generator
from oslo_policy import policy as oslo_policy

from inspector import conf as config
from inspector.api.policy_rules import list_rules
from inspector.errors import ConfigError, Forbidden

LOG = logging.getLogger(__name__)

#: oslo.policy's default [oslo_policy] policy_file: optional, unlike a file named explicitly.
DEFAULT_POLICY_FILE = "policy.yaml"

#: Namespace of our rules under the oslo.policy.policies and oslo.policy.enforcer entry points.
NAMESPACE = "inspector"

#: Decisions remembered at most (rule x distinct credentials); all are forgotten beyond.
MAX_DECISIONS = 4096
#: Seconds the API lets pass between two looks at the policy file for changes: looking
#: (oslo.policy searches every configuration directory) costs more than a status read.
API_RECHECK_INTERVAL = 1.0


def _check_policy_file(conf: cfg.ConfigOpts) -> None:
    """A policy file set explicitly must exist (oslo.policy would only log it at DEBUG)."""
    path = conf.oslo_policy.policy_file
    if path != DEFAULT_POLICY_FILE and conf.find_file(path) is None:
        raise ConfigError(f"[oslo_policy] policy_file: {path} not found")


def _key(rule: str, credentials: dict[str, Any]) -> tuple | None:
    """A hashable form of the rule and credentials; None when a value cannot be one."""
    try:
        items = tuple(
            sorted(
                (key, tuple(value) if isinstance(value, list) else value)
                for key, value in credentials.items()
            )
        )
        hash(items)
    except TypeError:
        return None
    return (rule, items)


class Policy:
    """Checks credentials against the rules: our defaults, overridden by the operator's file.

    The file ([oslo_policy] policy_file) is re-read by oslo.policy when it changes,
    looked at on every check, or at most once per `recheck_interval` seconds of `clock`.
    Decisions are remembered per rule and credentials until the rules change: evaluating
    a rule in oslo.policy costs far more than the status read it guards.
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        *,
        recheck_interval: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.recheck_interval = recheck_interval
        self.clock = clock
        self._next_recheck = float("-inf")
        self._decisions: dict[tuple, bool] = {}
        self._decisions_lock = threading.Lock()
        self._rules_seen: object = None
        self.enforcer = oslo_policy.Enforcer(conf)
        self.enforcer.register_defaults(list_rules())
        _check_policy_file(conf)
        try:
            self.enforcer.load_rules()
            self.enforcer.check_rules(raise_on_violation=True)
        except (ValueError, oslo_policy.InvalidDefinitionError) as exc:
            raise ConfigError(
                f"[oslo_policy] policy_file {self.enforcer.policy_path}: {exc}"
            ) from exc
        if not conf.oslo_policy.enforce_new_defaults:
            LOG.warning(
                "[oslo_policy] enforce_new_defaults is false: the deprecated role rules "
                "(is_admin, is_observer) pass too, wherever the policy file keeps a default"
            )

    def authorize(
        self, rule: str, credentials: dict[str, Any], target: dict[str, Any] | None = None
    ) -> None:
        """Return if the credentials pass the rule; raise Forbidden naming the rule if not."""
        rules = self._current_rules()
        key = None if target else _key(rule, credentials)
        allowed = None if key is None else self._decisions.get(key)
        if allowed is None:
            allowed = self._evaluate(rule, credentials, target or {})
            if key is not None:
                self._remember(key, allowed, rules)
        elif not allowed:
            LOG.info("Policy %s refused user %s", rule, credentials.get("user_id"))
        if not allowed:
            raise Forbidden(f"Access was denied to the following resource: {rule}")

    def _current_rules(self) -> object:
        """The enforcer's rules, after forgetting every decision if they changed.

        oslo.policy re-reads a changed file in load_rules() and then builds a new Rules
        object (the enforcer's default overwrite=True): its identity tells a change.
        """
        now = self.clock()
        if now >= self._next_recheck:
            self._next_recheck = now + self.recheck_interval
            self.enforcer.load_rules()
        rules = self.enforcer.rules
        if rules is not self._rules_seen:
            with self._decisions_lock:
                self._decisions = {}
                # Held, not just its id(): a freed object's id can be reused.
                self._rules_seen = rules
        return rules

    def _remember(self, key: tuple, allowed: bool, rules: object) -> None:
        with self._decisions_lock:
            # A decision taken while the rules were being reloaded is not kept.
            if rules is not self._rules_seen or rules is not self.enforcer.rules:
                return
            if len(self._decisions) >= MAX_DECISIONS:
                self._decisions = {}
            self._decisions[key] = allowed

    def _evaluate(self, rule: str, credentials: dict[str, Any], target: dict[str, Any]) -> bool:
        # oslo.policy's enforce() looks at the file itself: a miss is rare enough. A copy:
        # it adds "system" to a dict with "system_scope", which would change its key.
        try:
            self.enforcer.authorize(rule, target, dict(credentials), do_raise=True)
        except oslo_policy.PolicyNotAuthorized:
            LOG.info("Policy %s refused user %s", rule, credentials.get("user_id"))
        except oslo_policy.PolicyNotRegistered:
            LOG.error("Policy %s is not registered: refusing", rule)
        else:
            return True
        return False


def render_sample() -> str:
    """The sample policy file, as `oslopolicy-sample-generator --namespace inspector` writes it."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "policy.yaml.sample")
        # --config-file os.devnull: the generator's ConfigOpts must not read any real file.
        args = ["--namespace", NAMESPACE, "--output-file", path, "--config-file", os.devnull]
        generator.generate_sample(args, conf=cfg.ConfigOpts())
        with open(path, encoding="utf-8") as stream:
            return stream.read()


def get_enforcer() -> oslo_policy.Enforcer:
    """Entry point oslo.policy.enforcer = inspector, for the oslopolicy-* tools.

    They parse --namespace and --output-file themselves; the rest of the command line
    (--config-file ...) is our configuration, so that the operator's policy file is seen.
    """
    argv, args = sys.argv[1:], []
    while argv:
        arg = argv.pop(0)
        if arg.split("=", 1)[0].lstrip("-") in ("namespace", "output-file", "output_file"):
            if "=" not in arg and argv:
                argv.pop(0)
            continue
        args.append(arg)
    return Policy(config.load(args)).enforcer
