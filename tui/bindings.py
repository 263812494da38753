"""Every key of the room, in one place, each with an id a keymap file can rebind.

The ids are what ``~/.config/regulator/keymap.yaml`` (or ``$REGULATOR_KEYMAP``) names; the help
screen is made from these lists, so it shows the keys as they are bound.
"""

from __future__ import annotations

from textual.binding import Binding

APP = [
    Binding("question_mark", "help", "help", id="room.help"),
    Binding("exclamation_mark", "problems", "problems", id="room.problems"),
    Binding("P", "person", "person", id="room.person"),
    Binding("p", "pause", "pause", id="room.pause"),
    Binding("n", "notifications", "notices", id="room.notifications"),
    # Not priority bindings: over a dialog (a modal screen) no app key fires, ctrl+q either.
    Binding("q", "quit", "quit", id="room.quit"),
    Binding("ctrl+q", "quit", "quit", show=False, id="room.quit_now"),
]

MAIN = [
    Binding("1", "tab('instances')", "instances", show=False, id="main.instances"),
    Binding("2", "tab('inbox')", "inbox", show=False, id="main.inbox"),
    Binding("3", "tab('attention')", "attention", show=False, id="main.attention"),
    Binding("a", "answer", "answer", id="main.answer"),
    Binding("r", "resolve", "resolve", id="main.resolve"),
    Binding("c", "acknowledge", "ack", id="main.acknowledge"),
    Binding("e", "escalate", "escalate", id="main.escalate"),
    Binding("o", "open_unit", "unit", id="main.open_unit"),
    Binding("slash", "filter", "filter", id="main.filter"),
    Binding("f", "preset", "preset", id="main.preset"),
    Binding("w", "waiting", "waiting", show=False, id="main.waiting"),
    # Shown only on an obligation its unit waits on for that action (see check_action).
    Binding("R", "replan", "replan", id="main.replan"),
    Binding("m", "remediate", "remediate", id="main.remediate"),
    Binding("d", "drive", "drive", id="main.drive"),
    Binding("escape", "back", "back", show=False, id="main.back"),
]

# The acts, offered with the same keys (and ids, so a keymap moves them together) wherever a
# unit is shown: the inspector and the units table act on what the unit waits on.
ACTS = ("answer", "resolve", "acknowledge", "escalate", "replan", "remediate", "drive")
UNIT_ACTS = [b for b in MAIN if isinstance(b, Binding) and b.action in ACTS]

INSPECTOR = [
    Binding("escape", "back", "back", id="inspector.back"),
    *UNIT_ACTS,
    Binding("1", "tab('tab-timeline')", "timeline", show=False, id="inspector.timeline"),
    Binding("2", "tab('tab-contract')", "contract", show=False, id="inspector.contract"),
    Binding("3", "tab('tab-report')", "report", show=False, id="inspector.report"),
    Binding("slash", "filter", "kinds", id="inspector.filter"),
    Binding("left_square_bracket", "attempt(-1)", "prev att", id="inspector.previous_attempt"),
    Binding("right_square_bracket", "attempt(1)", "next att", id="inspector.next_attempt"),
]

# Every table of the room (``widgets.rowtable.RowTable``): moving, and Enter to open.
TABLE = [
    Binding("up,k", "cursor(-1)", "up", show=False, id="table.up"),
    Binding("down,j", "cursor(1)", "down", show=False, id="table.down"),
    Binding("pageup", "page(-1)", show=False, id="table.page_up"),
    Binding("pagedown", "page(1)", show=False, id="table.page_down"),
    Binding("home,g", "edge(0)", "first", show=False, id="table.first"),
    Binding("end,G", "edge(1)", "last", show=False, id="table.last"),
    Binding("enter", "select", "open", show=False, id="table.open"),
]

# Shown in the footer before anything else, so a narrow terminal never hides them.
PINNED = ("room.help", "room.quit")

# The help screen: what each key does, in words a person reads (keys come from the bindings).
HELP = [
    ("table.up table.down", "move (↑ ↓ j k; g G first and last; page up and down)"),
    ("table.open", "open: the obligation's detail (records that you saw it), a unit"),
    ("main.answer", "answer the selected question"),
    ("main.resolve", "resolve: a disposition and a rationale"),
    ("main.acknowledge", "acknowledge: seen, not resolved — the veto stands"),
    ("main.escalate", "escalate to another consumer"),
    ("main.open_unit", "open the obligation's unit in the inspector"),
    ("main.replan", "replan: edit the unit's contract in $EDITOR, give a reason, drive again"),
    ("main.remediate", "remediate: say what was fixed (and a command that shows it); drive again"),
    ("main.drive", "drive a unit nothing holds any more (asks first; scripted: the scenario)"),
    ("", "in the inspector and the units table, these keys act on what the unit waits on"),
    ("main.waiting", "go to the question a session is waiting on"),
    ("main.filter", "filter the inbox: text, is:blocking, kind:consent, unit:…, owed:human, !…"),
    ("main.preset", "presets: owed to me → all open → everything"),
    ("main.instances main.inbox main.attention", "instances, inbox, attention"),
    ("inspector.timeline inspector.contract inspector.report", "inspector: its tabs"),
    ("inspector.previous_attempt inspector.next_attempt", "inspector: previous / next attempt"),
    ("room.pause", "pause or resume live updates"),
    ("room.person", "switch the person acting (esc keeps who it is)"),
    ("room.problems", "the problems the readers found"),
    ("room.notifications", "the notifications log: every notice, refusal and drive outcome"),
    ("", "ctrl+p: command palette: every action, and go to a unit or obligation by id"),
    ("", "ctrl+y / ctrl+n: consent, uat: answer yes / no, with the note (enter never answers)"),
    ("main.back", "back out one layer; in a dialog: close it, answering nothing"),
    ("room.quit", "quit (asks first while a session waits for an answer)"),
]

TABLE_KEYS = {
    "table.up": "up,k",
    "table.down": "down,j",
    "table.open": "enter",
}


def all_ids() -> set[str]:
    return {b.id for b in [*APP, *MAIN, *INSPECTOR, *TABLE] if b.id}


__all__ = ["ACTS", "APP", "HELP", "INSPECTOR", "MAIN", "PINNED", "TABLE", "UNIT_ACTS", "all_ids"]
