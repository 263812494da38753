"""What the CLI and the room print of record text is redacted: an agent that read the channel
definitions may copy a channel's resolved secret, a canary or a credential into a question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from regulator.policy import load_definition
from regulator.protocol.execution import FailureObservation
from regulator.rules.asking import ask
from regulator.rules.execution import ExecutionStore
from regulator.rules.ledger import Ledger
from regulator.store import Layout

from .conftest import cli, run_cli
from .test_unit_show import contract

CHANNEL_SECRET = "dora-Ntfy-Pass-0042"
TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
ENV = {"DORA_NTFY_PASS": CHANNEL_SECRET}


@pytest.fixture
def leaky(instance: Path) -> tuple[Path, str, list[str]]:
    """An instance whose dora is reached on ntfy with ``${DORA_NTFY_PASS}``, and a unit whose
    question, reason and observation hold that secret, a canary and a GitHub token."""
    path = instance / "regulator" / "policies" / "interaction.yaml"
    source = load_definition(instance).source("interaction")
    policy = yaml.safe_load(source.read_text())
    policy["people"].append(
        {
            "name": "dora",
            "resolveUpTo": "advisory",
            "acceptRisk": False,
            "actAsS5": False,
            "channels": [{"type": "ntfy", "url": "ntfy://dora:${DORA_NTFY_PASS}@127.0.0.1:9/d"}],
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(policy))
    canary = "canary-Value-7731-planted"
    (instance / ".regulator" / "canaries").write_text(f"{canary}\n")
    layout = Layout(instance)
    store = ExecutionStore(layout)
    store.create_unit(contract())
    store.record_observation(
        FailureObservation.from_json_dict(
            {
                "unitId": "u1",
                "attempt": 1,
                "at": "2026-12-01T10:01:00.000Z",
                "source": "tool",
                "cause": "tool-error",
                "message": f"curl said {CHANNEL_SECRET}",
            }
        )
    )
    asked = ask(
        Ledger(layout),
        load_definition(instance).interaction,
        kind="consent",
        subject=f"publish with {CHANNEL_SECRET}",
        question=f"may I use {canary} and {TOKEN}?",
        action=f"curl -u dora:{CHANNEL_SECRET} https://ntfy.example",
        unit="u1",
        attempt=1,
    )
    return instance, asked.obligation.id, [CHANNEL_SECRET, canary, TOKEN]


@pytest.mark.parametrize(
    "argv",
    [
        ["obligations"],
        ["obligations", "--all"],
        ["obligations", "--json"],
        ["obligations", "--unit", "u1", "--json"],
        ["obligation", "show", "{oid}"],
        ["obligation", "show", "{oid}", "--json"],
        ["unit", "show", "u1"],
        ["status"],
        ["status", "--json"],
    ],
)
def test_a_secret_an_agent_put_in_a_question_is_printed_redacted(
    leaky: tuple[Path, str, list[str]], argv: list[str]
) -> None:
    root, oid, secrets = leaky
    result = run_cli(*[a.replace("{oid}", oid) for a in argv], cwd=root, env=ENV)
    assert result.returncode == 0, result.stderr
    for secret in secrets:
        assert secret not in result.stdout, (argv, secret)
    assert "«redacted»" in result.stdout
    if "--json" in argv:
        json.loads(result.stdout)  # still JSON


def test_obligations_json_is_the_redacted_list_print_json_would_write(
    leaky: tuple[Path, str, list[str]],
) -> None:
    root, oid, _ = leaky
    listed = run_cli("obligations", "--all", "--json", cwd=root, env=ENV)
    assert listed.returncode == 0, listed.stderr
    [item] = json.loads(listed.stdout)
    assert item["id"] == oid and item["subject"] == "consent: publish with «redacted»"
    assert listed.stdout == json.dumps([item], indent=2, ensure_ascii=False) + "\n"
    nothing = run_cli("obligations", "--unit", "none", "--json", cwd=root, env=ENV)
    assert nothing.stdout == "[]\n"


def test_without_the_channel_secret_in_reach_only_canaries_and_shapes_are_redacted(
    leaky: tuple[Path, str, list[str]],
) -> None:
    # The secret is what the channel resolves to where the command runs: unset, it is unknown.
    root, oid, (secret, canary, token) = leaky
    shown = run_cli("obligation", "show", oid, cwd=root, env={"DORA_NTFY_PASS": ""})
    assert canary not in shown.stdout and token not in shown.stdout
    assert secret in shown.stdout


def test_the_rooms_redactor_knows_the_channel_secrets(
    leaky: tuple[Path, str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.model import InstanceModel

    root, _, secrets = leaky
    monkeypatch.setenv("DORA_NTFY_PASS", CHANNEL_SECRET)
    model = InstanceModel(root)
    for secret in secrets:
        assert secret not in model.redactor.safe(f"the agent wrote {secret} here")


def test_a_fifo_planted_as_the_interaction_policy_does_not_stop_obligations(
    instance: Path,
) -> None:
    # The redactor looks into the policy for a ${NAME} before printing: it must not block.
    import os

    policies = instance / "regulator" / "policies"
    policies.mkdir(parents=True, exist_ok=True)
    (policies / "interaction.yaml").unlink(missing_ok=True)  # init's, replaced by the FIFO
    os.mkfifo(policies / "interaction.yaml")
    listed = cli("obligations", cwd=instance)
    assert listed.returncode == 0, listed.stderr
