"""Loading and validating a definition's policies (YAML or JSON)."""

from regulator.policy.loader import (
    POLICY_KINDS,
    Definition,
    PolicyError,
    load_definition,
    load_policy_file,
    shipped_policies_dir,
)

__all__ = [
    "POLICY_KINDS",
    "Definition",
    "PolicyError",
    "load_definition",
    "load_policy_file",
    "shipped_policies_dir",
]
