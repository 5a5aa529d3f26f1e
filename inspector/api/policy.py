"""API access rules (oslo.policy): ironic-inspector's rule names and defaults, and their check.

Decides what credentials may do; who the caller is comes from auth.py. Unknown rules deny.
"""

import logging
import os
import sys
import tempfile
from typing import Any

from oslo_config import cfg
from oslo_policy import generator
from oslo_policy import policy as oslo_policy

from inspector import conf as config
from inspector.errors import ConfigError, Forbidden

LOG = logging.getLogger(__name__)

#: oslo.policy's default [oslo_policy] policy_file: optional, unlike a file named explicitly.
DEFAULT_POLICY_FILE = "policy.yaml"

#: Namespace of our rules under the oslo.policy.policies and oslo.policy.enforcer entry points.
NAMESPACE = "inspector"

ADMIN = "rule:is_admin"
READER = "rule:is_observer"
PUBLIC = "rule:public_api"

BASE_RULES = [
    oslo_policy.RuleDefault(
        "is_admin",
        "role:admin or role:administrator or role:baremetal_admin or role:service",
        description="Full read/write API access: start and abort introspection, read "
        "its data, manage introspection rules.",
    ),
    oslo_policy.RuleDefault(
        "is_observer",
        "role:reader or role:baremetal_observer or rule:is_admin",
        description="Read-only API access: introspection status.",
    ),
    oslo_policy.RuleDefault(
        "public_api",
        "is_public_api:True",
        description="Internal flag set on the routes that need no credentials.",
    ),
    oslo_policy.RuleDefault(
        "default",
        "!",
        description="Used for a rule that is not defined anywhere: deny.",
    ),
]


def _operation(name: str, check: str, description: str, *operations: str):
    """A documented rule; each operation is 'METHOD /path'."""
    return oslo_policy.DocumentedRuleDefault(
        name=name,
        check_str=check,
        description=description,
        operations=[
            {"method": method, "path": path}
            for method, path in (op.split(" ", 1) for op in operations)
        ],
    )


OPERATION_RULES = [
    _operation(
        "introspection",
        PUBLIC,
        "Access the API root for available versions information",
        "GET /",
    ),
    _operation(
        "introspection:version",
        PUBLIC,
        "Access the versioned API root for version information",
        "GET /{version}",
    ),
    _operation(
        "introspection:continue",
        PUBLIC,
        "Ramdisk callback to continue introspection",
        "POST /v1/continue",
    ),
    _operation(
        "introspection:status",
        READER,
        "Get introspection status",
        "GET /v1/introspection",
        "GET /v1/introspection/{node_id}",
    ),
    _operation(
        "introspection:start", ADMIN, "Start introspection", "POST /v1/introspection/{node_id}"
    ),
    _operation(
        "introspection:abort",
        ADMIN,
        "Abort introspection",
        "POST /v1/introspection/{node_id}/abort",
    ),
    _operation(
        "introspection:data",
        ADMIN,
        "Get introspection data",
        "GET /v1/introspection/{node_id}/data",
    ),
    _operation(
        "introspection:reapply",
        ADMIN,
        "Reapply introspection on stored data",
        "POST /v1/introspection/{node_id}/data/unprocessed",
    ),
    _operation(
        "introspection:rule:get",
        ADMIN,
        "Get introspection rule(s)",
        "GET /v1/rules",
        "GET /v1/rules/{rule_id}",
    ),
    _operation(
        "introspection:rule:delete",
        ADMIN,
        "Delete introspection rule(s)",
        "DELETE /v1/rules",
        "DELETE /v1/rules/{rule_id}",
    ),
    _operation("introspection:rule:create", ADMIN, "Create introspection rule", "POST /v1/rules"),
    _operation(
        "introspection:metrics",
        READER,
        'Read the Prometheus metrics (set to "" for a scraper without credentials)',
        "GET /metrics",
    ),
]


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every default rule (entry point oslo.policy.policies = inspector)."""
    return BASE_RULES + OPERATION_RULES


def _check_policy_file(conf: cfg.ConfigOpts) -> None:
    """A policy file set explicitly must exist (oslo.policy would only log it at DEBUG)."""
    path = conf.oslo_policy.policy_file
    if path != DEFAULT_POLICY_FILE and conf.find_file(path) is None:
        raise ConfigError(f"[oslo_policy] policy_file: {path} not found")


class Policy:
    """Checks credentials against the rules: our defaults, overridden by the operator's file.

    The file ([oslo_policy] policy_file) is re-read by oslo.policy when it changes.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
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

    def authorize(
        self, rule: str, credentials: dict[str, Any], target: dict[str, Any] | None = None
    ) -> None:
        """Return if the credentials pass the rule; raise Forbidden naming the rule if not."""
        try:
            self.enforcer.authorize(rule, target or {}, credentials, do_raise=True)
        except oslo_policy.PolicyNotAuthorized:
            LOG.info("Policy %s refused user %s", rule, credentials.get("user_id"))
        except oslo_policy.PolicyNotRegistered:
            LOG.error("Policy %s is not registered: refusing", rule)
        else:
            return
        raise Forbidden(f"Access was denied to the following resource: {rule}")


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
