"""The room's modal screens, one module per purpose.

- ``base``: the frame every dialog that acts shares (title, body, refusal line, buttons) and
  ``Done``, what an act did.
- ``answer``: the answer to a unit's question.
- ``obligation``: resolve, acknowledge and escalate an obligation.
- ``recovery``: replan and remediate what a unit waits on.
- ``drive``: drive a unit again (asked first), and what the dispatch gate would refuse.
- ``person``: who is acting. ``quit``: quitting while a session waits on a person.
- ``lists``: every key, the readers' problems, the notifications log.

Nothing is imported here: the App imports each module when its dialog is first opened (the
room's first screen is drawn before any of them is needed).
"""
