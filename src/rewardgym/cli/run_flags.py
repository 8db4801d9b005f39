"""The flags of ``gym eval run``: their typer declarations (help texts) and :class:`RunFlags`, the values as
parsed. Checking them against each other and the config is :mod:`rewardgym.cli.run_options`' job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from rewardgym.cli import adaptive_opts as ad
from rewardgym.cli.config_cmd import CONFIG_OPTION_NAMES

FLAGS = [
    *CONFIG_OPTION_NAMES,
    "--input", "--output", "--agent", "--limit", "--num-repeats", "--concurrency", "--resume", "--force",
    "--retry-failed", "--prompt-config", "--temperature", "--top-p", "--max-output-tokens",
    "--disable-aggregation", "--num-repeats-add-seed", "--no-serve", "--head-url", "--log-dir",
    "--startup-timeout", "--split", "--shard", "--no-health-check", "--health-check-workers",
    "--health-check-ignore", "--interleave-repeats", "--agent-fill-missing",
    "--from-curriculum", "--curriculum-batches", "--curriculum-batch-size",
    *ad.FLAGS,
]  # fmt: skip
"""Every flag of the command (hints for :func:`~rewardgym.cli.overrides.split_overrides`)."""

InputOpt = Annotated[
    Path | None,
    typer.Option(
        "--input",
        "-i",
        help="Input rows (JSONL). Required, except with --split or --resume.",
        show_default=False,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Rollouts file to write (JSONL; default results/rollouts.jsonl)."),
]
RunAgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent", "-a", help="Agent of every row (replacing a row's own agent_ref, as NeMo Gym 0.7.0)."
    ),
]
FillMissingOpt = Annotated[
    bool,
    typer.Option("--agent-fill-missing", help="--agent only sets rows without agent_ref; keep the rest."),
]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="Use only the first N input lines.", min=0)]
NumRepeatsOpt = Annotated[
    int | None,
    typer.Option(
        "--num-repeats", help="Rollouts per task.", show_default="1, or ++num_repeats of the config"
    ),
]
ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        "--concurrency", help="Rollouts in flight.", min=1, show_default="32, or num_samples_in_parallel"
    ),
]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue an interrupted run.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Resume although the run changed.")]
RetryFailedOpt = Annotated[bool, typer.Option("--retry-failed", help="On resume, run failed rollouts again.")]
PromptConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--prompt-config",
        help="YAML file with a 'user' (and optional 'system') prompt template; {field} is replaced by "
        "the row's field (Python str.format syntax).",
    ),
]
TemperatureOpt = Annotated[
    float | None, typer.Option("--temperature", help="Sampling temperature sent with every row.")
]
TopPOpt = Annotated[float | None, typer.Option("--top-p", help="Nucleus sampling top_p for every row.")]
MaxOutputTokensOpt = Annotated[
    int | None, typer.Option("--max-output-tokens", min=1, help="Output token limit for every row.")
]
DisableAggregationOpt = Annotated[
    bool, typer.Option("--disable-aggregation", help="Skip the aggregate metrics at the end.")
]
SplitOpt = Annotated[
    str | None,
    typer.Option(
        "--split",
        help="Collect the config's datasets of this split (train, validation, benchmark, example) "
        "instead of --input: collated into <output without suffix>/preprocessed_datasets/<split>.jsonl.",
    ),
]
ShardOpt = Annotated[
    str | None,
    typer.Option(
        "--shard",
        metavar="I/N",
        help="Run only shard I of N (tasks whose index is I modulo N; 0 <= I < N); merge the shards "
        "with 'gym eval aggregate'.",
    ),
]
AddSeedOpt = Annotated[
    bool, typer.Option("--num-repeats-add-seed", help="Send the rollout index as the sampling seed.")
]
InterleaveOpt = Annotated[
    bool,
    typer.Option(
        "--interleave-repeats",
        help="Order the rollouts round by round (abcabc: every task's rollout 0, then 1…) instead of "
        "each task's repeats back to back (aabbcc).",
    ),
]
NoServeOpt = Annotated[bool, typer.Option("--no-serve", help="Use servers of a running 'gym env start'.")]
HeadUrlOpt = Annotated[str | None, typer.Option("--head-url", help="Head registry URL (--no-serve).")]
LogDirOpt = Annotated[
    Path | None,
    typer.Option("--log-dir", help="Server logs (without --no-serve; default: <output folder>/logs)."),
]
StartupTimeoutOpt = Annotated[
    float,
    typer.Option("--startup-timeout", min=1, help="Seconds each server gets to answer (without --no-serve)."),
]
NoHealthCheckOpt = Annotated[bool, typer.Option("--no-health-check", help="Skip the health check.")]
HealthWorkersOpt = Annotated[
    int | None,
    typer.Option("--health-check-workers", help="Processes the closing health check reads with."),
]
HealthIgnoreOpt = Annotated[
    str | None,
    typer.Option("--health-check-ignore", metavar="ID[,ID…]", help="Health checks not to run."),
]

FromCurriculumOpt = Annotated[
    str | None,
    typer.Option(
        "--from-curriculum",
        help="Take the inputs, in batches, from a curriculum service URL "
        "and report the rewards to it (docs/curriculum.md).",
    ),
]
CurriculumBatchesOpt = Annotated[int, typer.Option("--curriculum-batches", min=1, help="Batches to run.")]
CurriculumBatchSizeOpt = Annotated[int, typer.Option("--curriculum-batch-size", min=1, help="Tasks a batch.")]


@dataclass(frozen=True)
class RunFlags:
    """The flags of ``gym eval run`` as typer parsed them (None: not given; the config key or default holds)
    — field names are the command's parameter names."""

    input: Path | None = None
    output: Path | None = None
    agent: str | None = None
    agent_fill_missing: bool = False
    limit: int | None = None
    num_repeats: int | None = None
    concurrency: int | None = None
    resume: bool = False
    force: bool = False
    retry_failed: bool = False
    prompt_config: Path | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    disable_aggregation: bool = False
    split: str | None = None
    shard: str | None = None
    add_seed: bool = False
    interleave_repeats: bool = False
    no_serve: bool = False
    head_url: str | None = None
    log_dir: Path | None = None
    startup_timeout: float = 600.0
    no_health_check: bool = False
    health_check_workers: int | None = None
    health_check_ignore: str | None = None
    config: list[Path] | None = None
    resources_server: list[str] | None = None
    model_type: list[str] | None = None
    search_dir: list[Path] | None = None
    model: str | None = None
    model_url: str | None = None
    model_api_key: str | None = field(default=None, repr=False)
    """Never printed (``repr=False``)."""
    model_api_key_file: Path | None = None
    from_curriculum: str | None = None
    curriculum_batches: int = 1
    curriculum_batch_size: int = 64
    adaptive: bool = False
    adaptive_initial: int | None = None
    adaptive_max: int | None = None
    adaptive_budget: int | None = None
    adaptive_step: int | None = None
    adaptive_confidence: float | None = None
    adaptive_boundary: float | None = None
    adaptive_pass_threshold: float | None = None

    def adaptive_options(self) -> dict[str, Any]:
        """The ``--adaptive*`` values as :func:`~rewardgym.cli.adaptive_opts.adaptive_settings` takes them."""
        return {
            "adaptive": self.adaptive, "initial": self.adaptive_initial, "max_per_task": self.adaptive_max,
            "budget": self.adaptive_budget, "step": self.adaptive_step,
            "confidence": self.adaptive_confidence, "boundary": self.adaptive_boundary,
            "pass_threshold": self.adaptive_pass_threshold,
        }  # fmt: skip
