"""The views: read-only projections of an instance — status, a unit's timeline, attention,
doctor — for the CLI and the control room. They write nothing.
"""
