"""A stand-in for an open control room, for headless demos only: PERSON counts as present.

Usage: python presence.py REPOSITORY [PERSON]   (stop it with kill; it removes its file)

In real use the person opens the room (`regulator room`), which keeps this presence itself.
"""

import signal
import sys
import time
from pathlib import Path

from regulator.host.presence import PresenceFile
from regulator.store import Layout

presence = PresenceFile(Layout(Path(sys.argv[1])), sys.argv[2] if len(sys.argv) > 2 else "alice")
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
try:
    while True:
        presence.beat()
        time.sleep(1)
finally:
    presence.close()
