"""``gym curriculum serve``: the online curriculum service (docs/curriculum.md).

``gym curriculum serve --input rows.jsonl [--profile P | --rollouts R] [--policy expected-signal]
[--group-size 8] [--state curriculum.npz] [--host 127.0.0.1] [--port 11500] [++auth_token=…]`` serves
:mod:`rewardgym.curriculum.server` until SIGINT / SIGTERM. The shared auth token comes from
``++auth_token=…`` or env.yaml as for every server; a non-loopback ``--host`` needs it. One line on
stdout says where it listens; a bad flag or file is one ``Error:`` line.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from rewardgym.cli.config_cmd import OVERRIDE_CONTEXT
from rewardgym.cli.main import app
from rewardgym.cli.overrides import split_overrides
from rewardgym.errors import UsageError

curriculum_app = typer.Typer(help="Serve an online curriculum to an RL trainer.", no_args_is_help=True)
app.add_typer(curriculum_app, name="curriculum")

_FLAGS = [
    "--input", "--profile", "--rollouts", "--policy", "--policy-options", "--group-size", "--seed",
    "--state", "--half-life", "--carry", "--save-every", "--reward-range", "--pass-threshold", "--host",
    "--port", "--domain-key", "--max-request-bytes",
]  # fmt: skip


def _range(text: str) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        raise UsageError(f"--reward-range: expected LOW,HIGH (e.g. 0,1), got {text!r}") from None
    return low, high


@curriculum_app.command("serve", context_settings=OVERRIDE_CONTEXT)
def serve(
    ctx: typer.Context,
    input_path: Annotated[Path, typer.Option("--input", "-i", help="The dataset's rows (JSONL).")],
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Cold start: a *_reward_profiling.jsonl of these rows.")
    ] = None,
    rollouts: Annotated[
        Path | None, typer.Option("--rollouts", help="Cold start: the rollouts file of 'gym eval run'.")
    ] = None,
    policy: Annotated[str, typer.Option("--policy", help="expected-signal, thompson, greso, …")] = (
        "expected-signal"
    ),
    policy_options: Annotated[
        str | None,
        typer.Option("--policy-options", help="The policy's options as JSON, e.g. '{\"explore\": 1}'."),
    ] = None,
    group_size: Annotated[int, typer.Option("--group-size", help="Rollouts per task (GRPO's G).")] = 8,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    state: Annotated[
        Path | None, typer.Option("--state", help="State file (+ .journal): resumes when it exists.")
    ] = None,
    half_life: Annotated[
        float | None, typer.Option("--half-life", help="Steps after which a group counts half.")
    ] = (None),
    carry: Annotated[
        float | None, typer.Option("--carry", help="Older evidence a task's new group keeps.")
    ] = None,
    save_every: Annotated[int, typer.Option("--save-every", help="Reports between two snapshots.")] = 1000,
    reward_range: Annotated[str, typer.Option("--reward-range", help="LOW,HIGH of a valid reward.")] = "0,1",
    pass_threshold: Annotated[
        float | None, typer.Option("--pass-threshold", help="A reward ≥ this passes (default: HIGH).")
    ] = None,
    domain_key: Annotated[
        str | None, typer.Option("--domain-key", help="Row field of the quotas' domains.")
    ] = (None),
    host: Annotated[
        str, typer.Option("--host", help="Interface to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 11500,
    max_request_bytes: Annotated[
        int, typer.Option("--max-request-bytes", help="Largest request body (larger: HTTP 413).")
    ] = 16 * 1024 * 1024,
) -> None:
    """Serve next_batch / report / state over HTTP until stopped (Ctrl-C snapshots the state)."""
    from rewardgym.config import load_config
    from rewardgym.curriculum.core import Curriculum
    from rewardgym.curriculum.rows import JsonlRows
    from rewardgym.curriculum.server import CurriculumServer
    from rewardgym.io.inputs import refuse_special_input
    from rewardgym.launch.binding import check_bind
    from rewardgym.launch.serve import serve_forever

    overrides = split_overrides(ctx.args, _FLAGS)
    cfg = load_config([], overrides, require_complete=False, check_keys=True)
    token = cfg.get("auth_token")
    check_bind("curriculum", host, network_bind=True, token=token)
    if profile is not None and rollouts is not None:
        raise UsageError("--profile and --rollouts: give one cold start, not both")
    try:
        options: Any = json.loads(policy_options) if policy_options else {}
    except ValueError:
        raise UsageError(f"--policy-options: not JSON: {policy_options!r}") from None
    if not isinstance(options, dict):
        raise UsageError("--policy-options: must be a JSON object")
    refuse_special_input(input_path, "--input")
    rows = JsonlRows(input_path)
    settings: dict[str, Any] = {
        "policy": policy,
        "group_size": group_size,
        "seed": seed,
        "state_path": state,
        "save_every": save_every,
        "reward_range": _range(reward_range),
        "pass_threshold": pass_threshold,
        "domain_key": domain_key,
        "policy_options": options,
    }
    if half_life is not None:
        settings["half_life"] = half_life
    if carry is not None:
        settings["carry"] = carry
    if profile is not None:
        curriculum = Curriculum.from_profile(rows, profile, **settings)
    elif rollouts is not None:
        curriculum = Curriculum.from_run(rows, rollouts, **settings)
    else:
        curriculum = Curriculum(rows, **settings)
    config = {
        "host": host,
        "port": port,
        "auth_token": str(token) if token else None,
        "max_request_bytes": max_request_bytes,
    }
    server = CurriculumServer(config, curriculum)
    typer.echo(
        f"gym curriculum: {len(rows)} tasks, policy {policy}, G={group_size}; serving on http://{host}:{port}",
    )
    sys.stdout.flush()  # the line is how a parent process knows the service is starting
    # uvicorn stops gracefully on SIGTERM (the state is snapshotted) and then re-raises the signal to the
    # handler it found: a no-op one makes that a normal exit (code 0), as for `gym env start`.
    signal.signal(signal.SIGTERM, lambda *_: None)
    serve_forever(server)
