"""An instance on another machine: its ``ssh://[user@]host[:port]/path`` address, and the
command line that runs ``regulator`` there (docs/reaching-people.md, "One room over several
machines").

The address comes from the command line, a config or a copied link, so it is checked before
it reaches ``ssh``: a host starting with ``-`` would be an option to ``ssh``
(``ssh://-oProxyCommand=…/x`` runs a command on this machine), and ``--`` before the host ends
``ssh``'s options whatever the host says. The remote command is one quoted string, as ``ssh``
hands it to the remote shell; the path in it, after ``--instance``, always starts with ``/``
(an ``ssh://`` URL's path does), so it is never read as an option there either.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from urllib.parse import urlsplit

# What a host name, an IPv4 or an IPv6 address is made of (urlsplit drops IPv6's brackets).
_HOST = re.compile(r"[A-Za-z0-9._:%-]+")
# A user name ssh passes on: no space, no control character, nothing that starts an option.
_USER = re.compile(r"[A-Za-z0-9._$-]+")


@dataclass(frozen=True)
class RemoteTarget:
    host: str  # [user@]host, as ssh takes it
    port: int | None
    path: str

    @property
    def url(self) -> str:
        port = f":{self.port}" if self.port else ""
        return f"ssh://{self.host}{port}{self.path}"


def parse_target(given: str) -> RemoteTarget:
    """``ssh://[user@]host[:port]/path``; a ValueError names what is wrong."""
    parts = urlsplit(given)
    if parts.scheme != "ssh" or not parts.hostname:
        raise ValueError(f"{given}: not ssh://[user@]host[:port]/path/to/repo")
    hostname, user = parts.hostname, parts.username
    if hostname.startswith("-") or not _HOST.fullmatch(hostname):
        raise ValueError(f"{given}: {hostname!r} is not a host name")
    if user is not None and (user.startswith("-") or not _USER.fullmatch(user)):
        raise ValueError(f"{given}: {user!r} is not a user name")
    if not parts.path or parts.path == "/":
        raise ValueError(f"{given}: no path to the instance on {hostname}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{given}: the port is not a number") from None
    host = f"{user}@{hostname}" if user else hostname
    return RemoteTarget(host, port, parts.path)


def remote_command(target: RemoteTarget, *args: str) -> list[str]:
    """The local argv that runs ``regulator ARGS --instance PATH`` on the target's host.

    ``REGULATOR_SSH`` replaces ``ssh`` (``ssh -o BatchMode=yes``, a script), ``REGULATOR_REMOTE``
    the ``regulator`` run there; either is split as a shell would split it.
    """
    transport = shlex.split(os.environ.get("REGULATOR_SSH", "ssh"))
    port = ["-p", str(target.port)] if target.port else []
    program = shlex.split(os.environ.get("REGULATOR_REMOTE", "regulator"))
    # ssh hands the remote shell one string: each argument quoted, so none is split or expanded.
    remote = shlex.join([*program, *args, "--instance", target.path])
    # "--": whatever the host is, ssh reads it as the destination, never as an option.
    return [*transport, *port, "--", target.host, remote]
