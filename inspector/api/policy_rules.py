"""ironic-inspector 12.5's API access rules: their names, check strings and documented
defaults (secure RBAC, each with its old role rule as an oslo.policy DeprecatedRule).
inspector.api.policy checks credentials against them.
"""

from oslo_policy import policy as oslo_policy

# ironic-inspector 12.5's check strings, character for character (its policy.py): a
# system-scoped admin or reader; the admin role in any project ("admin is admin across all
# projects", OpenStack's RBAC direction); the service role, Ironic's service user.
SYSTEM_ADMIN = "role:admin and system_scope:all"
SYSTEM_READER = "role:reader and system_scope:all"
ADMIN = f"({SYSTEM_ADMIN}) or (role:admin) or (role:service)"
READER = f"({SYSTEM_READER}) or (role:admin) or (role:service)"
PUBLIC = "rule:public_api"

#: The rules before secure RBAC: the deprecated alternative of each default.
DEPRECATED_ADMIN = "rule:is_admin"
DEPRECATED_READER = "rule:is_admin or rule:is_observer"
DEPRECATED_REASON = "The inspector API is now aware of system scope and default roles."
#: The OpenStack release whose ironic-inspector deprecated the old rules (Wallaby), as
#: upstream's policy file says it.
DEPRECATED_SINCE = "W"

BASE_RULES = [
    oslo_policy.RuleDefault(
        "is_admin",
        "role:admin or role:administrator or role:baremetal_admin",
        description="Full read/write API access",
        deprecated_for_removal=True,
        deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE,
    ),
    oslo_policy.RuleDefault(
        "is_observer",
        "role:baremetal_observer",
        description="Read-only API access",
        deprecated_for_removal=True,
        deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE,
    ),
    oslo_policy.RuleDefault(
        "public_api",
        "is_public_api:True",
        description="Internal flag for public API routes",
    ),
    oslo_policy.RuleDefault(
        "default",
        "!",
        description="Default API access policy",
    ),
]


def _operation(
    name: str, check: str, description: str, *operations: str, deprecated: str | None = None
) -> oslo_policy.DocumentedRuleDefault:
    """A documented rule; each operation is 'METHOD /path'; `deprecated`: the check string
    it replaces, kept as its DeprecatedRule."""
    return oslo_policy.DocumentedRuleDefault(
        name=name,
        check_str=check,
        description=description,
        operations=[
            {"method": method, "path": path}
            for method, path in (op.split(" ", 1) for op in operations)
        ],
        deprecated_rule=None
        if deprecated is None
        else oslo_policy.DeprecatedRule(
            name=name,
            check_str=deprecated,
            deprecated_reason=DEPRECATED_REASON,
            deprecated_since=DEPRECATED_SINCE,
        ),
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
        "POST /continue",
    ),
    _operation(
        "introspection:status",
        READER,
        "Get introspection status",
        "GET /introspection",
        "GET /introspection/{node_id}",
        deprecated=DEPRECATED_READER,
    ),
    _operation(
        "introspection:start",
        ADMIN,
        "Start introspection",
        "POST /introspection/{node_id}",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:abort",
        ADMIN,
        "Abort introspection",
        "POST /introspection/{node_id}/abort",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:data",
        ADMIN,
        "Get introspection data",
        "GET /introspection/{node_id}/data",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:reapply",
        ADMIN,
        "Reapply introspection on stored data",
        "POST /introspection/{node_id}/data/unprocessed",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:rule:get",
        ADMIN,
        "Get introspection rule(s)",
        "GET /rules",
        "GET /rules/{rule_id}",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:rule:delete",
        ADMIN,
        "Delete introspection rule(s)",
        "DELETE /rules",
        "DELETE /rules/{rule_id}",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:rule:create",
        ADMIN,
        "Create introspection rule",
        "POST /rules",
        deprecated=DEPRECATED_ADMIN,
    ),
    # Not ironic-inspector's: Inspector's own routes (API 1.19).
    _operation(
        "introspection:rule:check",
        ADMIN,
        "Check introspection rules against nodes' stored data, applying nothing",
        "POST /rules/check",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:report",
        ADMIN,
        "Read the fleet hardware report built from every node's stored data",
        "GET /report/hardware",
        deprecated=DEPRECATED_ADMIN,
    ),
    _operation(
        "introspection:metrics",
        READER,
        'Read the Prometheus metrics, as a status reader may (set to "" for a scraper '
        "without credentials)",
        "GET /metrics",
        deprecated=DEPRECATED_READER,
    ),
]


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every default rule (entry point oslo.policy.policies = inspector)."""
    return BASE_RULES + OPERATION_RULES
