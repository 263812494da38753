"""The host: what touches the machine — the S3 loop, agent sessions and their tools, the MCP
server and hooks, git worktrees and leases, delivery, the instance itself.

It builds on the rules, the policy, the store and the protocol, and never on the views or
the CLI above it.
"""
