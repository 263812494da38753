"""The answer page: a question answered from the link its message carried (ours).

``regulator serve --http HOST:PORT`` serves, for each link :mod:`regulator.host.answer_links`
issued, a page with the question, what a yes authorizes and the evidence, all as inert text
(every character a terminal could act on made visible, then HTML-escaped; no script at all),
and the kind's buttons: Yes / No for a consent or a uat, the options of a choice, a text field
for a clarification, "looks right" or a correction for a recap; and a note field.

Answering:

* only by POST, with the link's token in the form as well as in the path, the form's
  ``obligation`` the link's own, an ``Origin`` (when the browser sends one) of this very host,
  and never on a GET: a page another site shows cannot answer, and a link opened by a mail
  scanner answers nothing;
* a consent or a uat only by a second, deliberate step that restates the action, whose form
  carries a proof (an HMAC under this server's own key) that the person saw that restatement;
* through the same disposition and authority as ``regulator answer``
  (:func:`regulator.rules.dispositions.answer`): the link's person must still be allowed; the
  provenance says ``via: link`` and the channel that carried the link;
* once: the link is spent with the answer; a used, expired, closed, unknown or foreign link
  answers nothing, and its page says why with the HTTP status to match (404 unknown, 410 used,
  expired or closed, 403 a form that is not this link's or another site's).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from regulator.host import answer_links
from regulator.host.channels import Scrubber, channel_secrets
from regulator.host.instance import read_canaries
from regulator.policy import Definition
from regulator.protocol.clock import Clock, system_clock
from regulator.protocol.errors import Refused
from regulator.protocol.interaction import InteractionRequest
from regulator.protocol.obligations import ObligationState
from regulator.protocol.text import visible
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.rules.answers import AnswerRefused, interpret
from regulator.rules.ledger import Actor, Ledger, definition_label
from regulator.store import Layout

MAX_BODY = 64 * 1024
ANSWER_CHANNEL = "outbox"  # the interaction-answered event's channel, from the original's list
TITLES = {
    "consent": "Consent",
    "uat": "Acceptance",
    "choice": "Choice",
    "clarification": "Question",
    "recap": "Recap",
}
HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "no-store",
    # The token is in the URL: never sent on to another site. (Not no-referrer: with it a
    # browser posts the page's own form with "Origin: null", which is refused as foreign.)
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
}
STYLE = """
body{font:16px/1.45 system-ui,sans-serif;max-width:40rem;margin:0 auto;padding:1rem;
color:#1b1b1b;background:#fafafa}
h1{font-size:1.3rem;margin:.2rem 0 .6rem}h2{font-size:.95rem;margin:1rem 0 .3rem;color:#555}
.meta{color:#666;font-size:.85rem}.text{white-space:pre-wrap;overflow-wrap:anywhere;
background:#fff;border:1px solid #ddd;border-radius:6px;padding:.6rem .8rem;margin:0}
.action .text{border-color:#c62828;background:#fff5f5;font-weight:600}
ul.evidence{padding-left:1.2rem;overflow-wrap:anywhere}
textarea{width:100%;box-sizing:border-box;min-height:4.5rem;font:inherit;padding:.4rem}
.buttons{display:flex;flex-wrap:wrap;gap:.6rem;margin-top:.9rem}
button{font:inherit;font-weight:600;padding:.7rem 1.2rem;border-radius:6px;border:1px solid #888;
background:#fff;cursor:pointer;min-width:6rem}
button.yes{background:#1b5e20;color:#fff;border-color:#1b5e20}
button.no{background:#b71c1c;color:#fff;border-color:#b71c1c}
.notice{padding:.7rem .9rem;border-radius:6px;background:#fff8e1;border:1px solid #f0c36d}
.done{background:#e8f5e9;border-color:#81c784}.refused{background:#ffebee;border-color:#e57373}
a{color:#0d47a1}
"""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: str


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        '<meta name=robots content="noindex">'
        f"<title>{title}</title><style>{STYLE}</style></head><body>{body}</body></html>"
    )


def _notice(title: str, text: str, css: str = "") -> str:
    return _page(
        "regulator: " + html.escape(title),
        f"<h1>{html.escape(title)}</h1><p class='notice {css}'>{html.escape(text)}</p>",
    )


class AnswerService:
    """What the pages say and do; the HTTP handler only carries requests to it."""

    def __init__(
        self,
        layout: Layout,
        definition: Callable[[], Definition],
        *,
        clock: Clock = system_clock,
        scrub: Callable[[str], str] | None = None,
        say: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self.layout = layout
        self.definition = definition
        self.clock = clock
        self.scrub = scrub
        self.say = say
        self.ledger = Ledger(layout, clock=clock)
        self._key = secrets.token_bytes(32)  # proofs of the second step; new on each start
        # One request at a time reads or answers: a link is checked and spent as one step.
        self._lock = threading.Lock()

    # -- text ------------------------------------------------------------------------------

    def _scrubber(self, defn: Definition) -> Scrubber:
        values = [*channel_secrets(defn.interaction), *read_canaries(self.layout)]
        return Scrubber(values, self.scrub)

    @staticmethod
    def _inert(scrub: Callable[[str], str], text: str) -> str:
        """Record text (an agent's) as it may appear in the page: redacted, every control
        character made visible, then escaped, so it is text and never markup."""
        return html.escape(visible(scrub(text), newlines=True), quote=True)

    def _proof(self, token: str, obligation_id: str, answer: str) -> str:
        message = f"{token}\0{obligation_id}\0{answer}".encode("utf-8", "surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    # -- finding the question --------------------------------------------------------------

    def _question(
        self, token: str
    ) -> tuple[answer_links.Link, ObligationState, InteractionRequest] | Response:
        try:
            link = answer_links.check(self.layout, token, self.clock)
        except answer_links.LinkRefused as exc:
            return Response(exc.status, _notice("This link answers nothing", str(exc), "refused"))
        log = self.ledger.refresh()
        o = log.obligations.get(link.obligation_id)
        interaction = log.interaction_for(link.obligation_id)
        if o is None or interaction is None:
            return Response(
                404, _notice("This link answers nothing", "its question is not in the log")
            )
        if o.status in TERMINAL_STATUSES:
            how = f" as {o.disposition}" if o.disposition else ""
            who = f" by {o.closed_by}" if o.closed_by else ""
            text = (
                f"this question is {o.status}{who}{how}: it was answered or closed already, "
                "and this link answers nothing more"
            )
            return Response(410, _notice("Already answered", visible(text), "refused"))
        return link, o, interaction.request

    # -- GET -------------------------------------------------------------------------------

    def page(self, token: str) -> Response:
        with self._lock:
            found = self._question(token)
            if isinstance(found, Response):
                return found
            link, o, request = found
            return Response(200, self._render(token, link, o, request))

    def _render(
        self,
        token: str,
        link: answer_links.Link,
        o: ObligationState,
        request: InteractionRequest,
        error: str | None = None,
    ) -> str:
        defn = self.definition()
        scrub = self._scrubber(defn)

        def t(text: str) -> str:
            return self._inert(scrub, text)

        kind = request.kind
        parts = [
            f"<h1>{TITLES.get(kind, 'Question')} — {t(request.subject)}</h1>",
            f"<p class=meta>for {t(link.person)} · {t(o.severity)}"
            f"{' veto' if o.blocks else ''} · unit {t(o.unit or 'none')} · "
            f"obligation {t(o.id[:8])} · via {t(link.channel)}</p>",
        ]
        if error:
            parts.append(f"<p class='notice refused'>{html.escape(error)}</p>")
        parts.append(f"<h2>Question</h2><p class=text>{t(request.question)}</p>")
        if request.action:
            parts.append(
                "<div class=action><h2>A yes authorizes</h2>"
                f"<p class=text>{t(request.action)}</p></div>"
            )
        if request.evidence:
            items = []
            for e in request.evidence:
                said = f" — {t(e.observation)}" if e.observation else ""
                items.append(f"<li>{t(e.class_)}: {t(e.ref)}{said}</li>")
            parts.append(f"<h2>Evidence</h2><ul class=evidence>{''.join(items)}</ul>")
        form = [self._hidden(token, o.id)]
        if kind in ("consent", "uat"):
            form.append(self._note())
            yes = "Yes…" if kind == "consent" else "Accept…"
            no = "No…" if kind == "consent" else "Reject…"
            form.append(
                "<div class=buttons>"
                f"<button class=yes name=answer value=yes>{yes}</button>"
                f"<button class=no name=answer value=no>{no}</button></div>"
            )
        elif kind == "choice":
            form.append(self._note())
            # The option's number, read back on this side: the text itself may have been
            # redacted or escaped for the page.
            buttons = "".join(
                f"<button name=answer value='option:{i}'>{i}. {t(option)}</button>"
                for i, option in enumerate(request.options or [], 1)
            )
            form.append(f"<div class=buttons>{buttons}</div>")
        elif kind == "recap":
            form.append(
                "<h2>Correction (leave empty if it is right)</h2>"
                "<textarea name=text maxlength=4000></textarea>"
            )
            form.append(self._note())
            form.append(
                "<div class=buttons><button class=yes name=answer value=ok>Looks right</button>"
                "<button name=submit value=text>Send the correction</button></div>"
            )
        else:
            form.append(
                "<h2>Your answer</h2><textarea name=text maxlength=4000 required></textarea>"
            )
            form.append(self._note())
            form.append(
                "<div class=buttons>"
                "<button class=yes name=submit value=text>Send the answer</button></div>"
            )
        parts.append(f"<form method=post>{''.join(form)}</form>")
        parts.append(
            "<p class=meta>This link is yours alone and works once. Answering here is the same "
            "as <code>regulator answer</code>: your authority is checked again.</p>"
        )
        return _page(f"regulator: {t(request.subject)}", "".join(parts))

    @staticmethod
    def _hidden(token: str, obligation_id: str) -> str:
        return (
            f"<input type=hidden name=link value='{html.escape(token, quote=True)}'>"
            f"<input type=hidden name=obligation value='{html.escape(obligation_id, quote=True)}'>"
        )

    @staticmethod
    def _note(value: str = "") -> str:
        return (
            "<h2>Note (optional: a reason, a condition; the agent gets it)</h2>"
            f"<textarea name=note maxlength=2000>{html.escape(value)}</textarea>"
        )

    # -- POST ------------------------------------------------------------------------------

    def post(self, token: str, form: dict[str, str]) -> Response:
        if not hmac.compare_digest(form.get("link", ""), token):
            return Response(
                403,
                _notice("Refused", "this form does not belong to this link: nothing was answered"),
            )
        with self._lock:
            found = self._question(token)
            if isinstance(found, Response):
                return found
            link, o, request = found
            if form.get("obligation") != o.id:
                return Response(
                    403,
                    _notice(
                        "Refused",
                        "this form is for another question: a link answers only its own, "
                        "and nothing was answered",
                        "refused",
                    ),
                )
            kind = request.kind
            typed = form.get("submit") == "text"
            text = form.get("text", "") if typed else form.get("answer", "")
            if kind == "choice" and text.startswith("option:"):
                number = text.removeprefix("option:")
                options = request.options or []
                if number.isdigit() and 1 <= int(number) <= len(options):
                    text = options[int(number) - 1]
            note = form.get("note", "").strip() or None
            if kind == "recap" and form.get("submit") == "text" and not text.strip():
                text = "ok"  # an empty correction says the recap is right
            try:
                meaning = interpret(kind, text, request.options)
            except AnswerRefused as exc:
                return Response(422, self._render(token, link, o, request, error=str(exc)))
            if kind in ("consent", "uat"):
                proof = form.get("confirm", "")
                expected = self._proof(token, o.id, meaning.answer)
                if not proof or not hmac.compare_digest(proof, expected):
                    return Response(200, self._confirm(token, link, o, request, meaning, note))
            return self._answer(link, o, request, text, note)

    def _confirm(
        self,
        token: str,
        link: answer_links.Link,
        o: ObligationState,
        request: InteractionRequest,
        meaning: Any,
        note: str | None,
    ) -> str:
        """The second step of a consent or a uat: the action restated, one button."""
        scrub = self._scrubber(self.definition())

        def t(text: str) -> str:
            return self._inert(scrub, text)

        yes = meaning.disposition != "rejected"
        what = request.action or request.question
        if request.kind == "consent":
            head = "Authorize this?" if yes else "Refuse this?"
            verb = "Yes, authorize it" if yes else "No, refuse it"
            lead = "A yes lets the agent do exactly this:" if yes else "You refuse that it:"
        else:
            head = "Accept this as done?" if yes else "Reject this?"
            verb = "Yes, accept it" if yes else "No, reject it"
            lead = "You confirm that this is done as asked:" if yes else "You say it is not:"
        parts = [
            f"<h1>{head}</h1>",
            f"<p class=meta>{TITLES[request.kind]} — {t(request.subject)} · for "
            f"{t(link.person)} · obligation {t(o.id[:8])}</p>",
            f"<p>{lead}</p><div class=action><p class=text>{t(what)}</p></div>",
        ]
        if note:
            parts.append(f"<h2>Your note</h2><p class=text>{t(note)}</p>")
        parts.append(
            "<form method=post>"
            + self._hidden(token, o.id)
            + f"<input type=hidden name=answer value='{t(meaning.answer)}'>"
            + f"<input type=hidden name=note value='{t(note or '')}'>"
            + "<input type=hidden name=confirm "
            + f"value='{self._proof(token, o.id, meaning.answer)}'>"
            + f"<div class=buttons><button class={'yes' if yes else 'no'}>{verb}</button></div>"
            + "</form><p><a href=''>Back to the question</a></p>"
        )
        return _page("regulator: confirm", "".join(parts))

    def _answer(
        self,
        link: answer_links.Link,
        o: ObligationState,
        request: InteractionRequest,
        text: str,
        note: str | None,
    ) -> Response:
        from regulator.rules import dispositions

        defn = self.definition()
        actor = Actor(via="link", definition=definition_label(defn.root), channel=link.channel)
        try:
            done = dispositions.answer(
                self.ledger,
                defn.interaction,
                o.id,
                link.person,
                actor,
                text,
                channel=ANSWER_CHANNEL,
                note=note,
            )
        except Refused as exc:
            # Nothing was written, and the link stays usable (as a refused code does).
            return Response(403, _notice("Refused", visible(str(exc)), "refused"))
        answer_links.consume(self.layout, link.id, self.clock)
        self.say(
            visible(
                f"answered {o.id[:8]} as {link.person} via link (channel {link.channel}): "
                f"{done.disposition}"
            )
        )
        scrub = self._scrubber(defn)
        said = self._inert(scrub, done.answer)
        return Response(
            200,
            _page(
                "regulator: answered",
                f"<h1>Answered</h1><p class='notice done'>{TITLES.get(done.kind, 'Question')}"
                f" — {self._inert(scrub, request.subject)}: <b>{html.escape(done.disposition)}"
                f"</b></p><p class=text>{said}</p><p>The waiting agent has your answer. "
                "This link answers nothing more.</p>",
            ),
        )


# ------------------------------------------------------------------------------------------
# HTTP


class _Handler(BaseHTTPRequestHandler):
    server: AnswerHTTPServer
    server_version = "regulator"
    sys_version = ""
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a request line holds the token: it is never written anywhere

    def _send(self, response: Response, extra: dict[str, str] | None = None) -> None:
        body = response.body.encode("utf-8", "surrogateescape")
        self.send_response(response.status)
        for name, value in {**HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _token(self) -> str | None:
        path = urlsplit(self.path).path
        if not path.startswith(answer_links.PATH_PREFIX):
            return None
        token = path[len(answer_links.PATH_PREFIX) :]
        return token if token and "/" not in token else None

    def do_GET(self) -> None:
        token = self._token()
        if token is None:
            self._send(
                Response(
                    404,
                    _notice(
                        "Nothing here",
                        "regulator's answer pages are at the links its messages carry",
                    ),
                )
            )
            return
        self._send(self.server.service.page(token))

    do_HEAD = do_GET

    def do_POST(self) -> None:
        token = self._token()
        if token is None:
            self._send(Response(404, _notice("Nothing here", "no such answer page")))
            return
        refused = self._cross_site()
        if refused is not None:
            self._send(Response(403, _notice("Refused", refused, "refused")))
            return
        length_text = self.headers.get("Content-Length")
        if length_text is None or not length_text.isdigit():
            self._send(Response(411, _notice("Refused", "a form's length is required")))
            return
        length = int(length_text)
        if length > MAX_BODY:
            self._send(Response(413, _notice("Refused", "that form is too large")))
            return
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            self._send(Response(415, _notice("Refused", "only a form posted by the page")))
            return
        raw = self.rfile.read(length).decode("utf-8", "replace")
        fields = parse_qs(raw, keep_blank_values=True, max_num_fields=20)
        form = {name: values[0] for name, values in fields.items() if values}
        self._send(self.server.service.post(token, form))

    def _cross_site(self) -> str | None:
        """Why this POST comes from another site's page, or None."""
        if (self.headers.get("Sec-Fetch-Site") or "").lower() == "cross-site":
            return "another site's page cannot answer here"
        origin = self.headers.get("Origin")
        if origin is None:
            return None  # not a browser's cross-site form (they send an Origin on a POST)
        host = self.headers.get("Host") or ""
        try:
            origin_host = urlsplit(origin).netloc
        except ValueError:
            origin_host = ""
        if origin == "null" or origin_host.lower() != host.lower():
            return "another site's page cannot answer here"
        return None

    def do_PUT(self) -> None:
        self._send(Response(405, _notice("Refused", "only GET and POST")), {"Allow": "GET, POST"})

    do_DELETE = do_PATCH = do_PUT


class AnswerHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], service: AnswerService) -> None:
        self.service = service
        self.thread: threading.Thread | None = None
        super().__init__(address, _Handler)

    def serving(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; port 0: any free one)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http {text!r}: HOST:PORT, as 127.0.0.1:8765")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def served_url(server: AnswerHTTPServer) -> str:
    address = server.server_address
    host = address[0] if isinstance(address[0], str) else address[0].decode()
    port = address[1]
    shown = f"[{host}]" if ":" in host else host
    if shown in ("0.0.0.0", "[::]"):
        import socket

        shown = socket.gethostname()
    return f"http://{shown}:{port}"


def start_http(address: tuple[str, int], service: AnswerService) -> AnswerHTTPServer:
    """Bind and serve on a thread of its own; the caller stops it with ``shutdown()``."""
    import socket

    kind = AnswerHTTPServer
    if ":" in address[0]:

        class AnswerHTTPServer6(AnswerHTTPServer):
            address_family = socket.AF_INET6

        kind = AnswerHTTPServer6
    server = kind(address, service)
    server.thread = threading.Thread(target=server.serve_forever, name="answer-pages", daemon=True)
    server.thread.start()
    return server
