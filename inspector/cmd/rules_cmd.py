"""`inspector rules check FILE --node NODE`: the rules check (inspector.processing.rule_check)
run from the command line on this deployment's database and Ironic, printed readably or as
JSON. Applies nothing, as POST /v1/rules/check."""

import argparse
import json
import sys
from typing import Any

from oslo_config import cfg

from inspector import conf as config
from inspector import store
from inspector.api import schemas
from inspector.api.logs import setup_logging
from inspector.errors import BadRequest
from inspector.ironic.lazy import LazyIronic
from inspector.processing import rule_check


def _rules_document(path: str) -> list[Any]:
    """The rules of FILE: a rule, a list of rules, or {"rules": [...]} (JSON)."""
    try:
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
    except (OSError, ValueError) as exc:
        raise BadRequest(f"cannot read rules from {path}: {exc}") from None
    if isinstance(document, dict) and "actions" not in document and "rules" in document:
        document = document["rules"]
    rules = document if isinstance(document, list) else [document]
    if not rules:
        raise BadRequest(f"{path} holds no rule")
    return rules


def checked(conf: cfg.ConfigOpts, rules: list[Any], nodes: list[str]) -> list[dict]:
    """The check of `rules` (documents, validated as the API validates them) on nodes."""
    body = {"rules": rules, "nodes": nodes}
    valid = rule_check.rules_of(body, None, lambda r: schemas.validate(r, schemas.RULE, "rule"))
    idents = rule_check.nodes_of(body, conf.api.max_rules_check_nodes)
    db = store.Store.from_conf(conf)
    try:
        return rule_check.check(conf, valid, rule_check.load_nodes(idents, db, LazyIronic(conf)))
    finally:
        db.close()


def run_check(args: argparse.Namespace, argv: list[str]) -> int:
    conf = config.load(argv)
    setup_logging(conf, command=True)
    results = checked(conf, _rules_document(args.file), args.node)
    if args.json:
        print(json.dumps({"nodes": results}, indent=2, default=str))
    else:
        sys.stdout.write(render(results))
    return 0


def render(results: list[dict]) -> str:
    """The check as text: per node, each rule, why it matched or not, what would run."""
    lines = []
    for node in results:
        lines.append(f"Node {node['name'] or node['uuid']} ({node['uuid']})")
        if node["error"]:
            lines.append(f"  {node['error']}")
        for rule in node["rules"]:
            title = rule["description"] or rule["uuid"] or "rule"
            lines.append(f"  Rule {title!r}: {rule['outcome'].upper()}")
            if rule["error"]:
                lines.append(f"    error: {rule['error']}")
            for condition in rule["conditions"]:
                lines.append("    " + _condition(condition))
            if rule["actions"]:
                lines.append(
                    "    would run:" if rule["matched"] else "    formatted before the error:"
                )
            for action in rule["actions"]:
                params = ", ".join(f"{k}={v!r}" for k, v in action.items() if k != "action")
                lines.append(f"      {action['action']} {params}")
    return "\n".join(lines) + "\n"


def _condition(condition: dict) -> str:
    test = f"{condition['field']} {'not ' if condition['invert'] else ''}{condition['op']}"
    if condition["op"] != "is-empty":
        test += f" {condition['value']!r}"
    if condition["multiple"] != "any":
        test += f" ({condition['multiple']})"
    if condition["error"]:
        found = f"not tested ({condition['error']})"
    elif condition["missing"]:
        found = "the field has no value"
    else:
        found = "found " + ", ".join(repr(value) for value in condition["found"])
    return f"[{condition['index']}] {test}: {found} -> {str(condition['result']).lower()}"
