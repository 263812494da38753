"""Recorded agent payloads, and the harness that runs the real agents (real_clients.py)."""
