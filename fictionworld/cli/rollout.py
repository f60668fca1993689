"""``fictionworld rollout``, ``demo``, ``train-demo`` and ``export episodes`` (added to the app by :func:`register` and :mod:`fictionworld.cli.export`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fictionworld.cli.common import (
    MAX_TASKS,
    KnobOption,
    WorldModelApiOption,
    WorldModelNameOption,
    WorldModelOption,
    WorldModelUrlOption,
    check_output,
    entities_option,
    err,
    fail,
    http_url,
    out,
    parse_knobs,
    plain_text,
    positive,
    probability,
    warn,
    world_model_config,
)
from fictionworld.extras import require

__all__ = ["register"]

MAX_SAMPLES = 1_000  # episodes per task (a GRPO group) and training iterations: beyond is a typo
DEMO_RESULTS = "results.txt"  # the demo's table, saved in its --dir


def _top_k(value: int | None) -> int | None:
    if value is not None and value != -1 and value < 1:
        raise typer.BadParameter(f"must be -1 (off) or >= 1, not {value}")
    return value


# the openai agent's settings: option name → its key in the agent's config
_AGENT_OPTIONS = {"--agent-url": "base_url", "--agent-model": "model", "--tool-mode": "tool_mode",
                  "--temperature": "temperature", "--top-p": "top_p", "--top-k": "top_k"}  # fmt: skip


def _agent_settings(agent: str, options: dict) -> dict:
    """The openai agent's settings from its options; one given to another agent is an error
    (it would be silently ignored)."""
    given = {name: v for name, v in options.items() if v is not None}
    if agent != "openai" and given:
        fail(f"{', '.join(given)}: only for --agent openai, not --agent {agent}")
    return {_AGENT_OPTIONS[name]: v for name, v in given.items()}


def _agent_config(agent: str, config: str | None, llm: dict) -> dict:
    try:
        cfg = json.loads(config) if config else {}
    except json.JSONDecodeError as e:
        fail(f"--agent-config is not valid JSON ({e.msg})")
    if not isinstance(cfg, dict):
        fail("--agent-config must be a JSON object")
    return llm | cfg


def _response_model(directory: Path | None, model: str | None, agent: str) -> str:
    """The model name of official response files (checked before anything runs)."""
    from fictionworld.scoring.io import OFFICIAL_MODEL_NAME

    if directory is None:
        if model is not None:
            fail("--response-model goes with --official-responses DIR")
        return ""
    check_output(directory, "--official-responses", directory=True)
    name = agent if model is None else model
    if not OFFICIAL_MODEL_NAME.fullmatch(name):
        what = "--response-model" if model is not None else f"the agent name {agent!r}"
        fail(f"{what} cannot start official response file names: use 1 to 128 letters, digits, '.', '_' or '-'"
             + ("" if model is not None else " (give --response-model NAME)"))  # fmt: skip
    return name


def _keep_tasks(run_dir: Path, tasks: list) -> None:
    """Writes the run's tasks beside its episodes (``RUN/tasks.jsonl``, what ``score --responses
    RUN`` scores against): those of this invocation and of earlier ones on the same run, one per
    instance_id. Nothing when the run never started (no RUN)."""
    from fictionworld.scoring.io import RUN_TASKS_FILE
    from fictionworld.tasks.model import TaskError, read_tasks, write_tasks

    if not run_dir.is_dir():
        return
    path = run_dir / RUN_TASKS_FILE
    kept = {}
    if path.is_file():
        try:
            kept = {t.instance_id: t for t in read_tasks(path)}
        except TaskError as e:
            warn(f"{e}; rewritten with this run's tasks")
    write_tasks(list((kept | {t.instance_id: t for t in tasks}).values()), path)


def _table(title: str, rows: list[tuple]) -> Table:
    t = Table(title=title, title_justify="left")
    for c in ("agent", "episodes", "SR", "Row F1", "Item F1", "turns", "errors"):
        t.add_column(c, justify="left" if c == "agent" else "right")
    for r in rows:
        t.add_row(*r)
    return t


def _row(name: str, records: list[dict]) -> tuple:
    from fictionworld.rollouts.records import summarize

    scored = [r for r in records if r.get("scores") is not None]
    s = summarize(scored) if scored else None
    m = (lambda k: f"{s.metrics[k]['avg_n']:.3f}") if s else (lambda k: "–")
    turns = sum(r.get("turns", 0) for r in records) / max(len(records), 1)
    errors = sum(r.get("status") in ("error", "timeout") for r in records)
    return (name, str(len(records)), m("score"), m("f1_by_row"), m("f1_by_item"), f"{turns:.1f}", str(errors))


def _fail_if_none_ran(records: list, run_dir: Path) -> None:
    """A run in which every episode failed (an error or a timeout: an agent whose server is down,
    say) is a failed command: one line that says so, with the last error, and exit 1."""
    failed = [r for r in records if r.status in ("error", "timeout")]
    if records and len(failed) == len(records):
        last = " ".join(str(failed[-1].error or failed[-1].status).split())
        fail(f"every episode failed ({len(failed)} of {len(records)}); last: {last[:300]} "
             f"(episodes in {run_dir / 'episodes.jsonl'}; a rerun runs them again)", 1)  # fmt: skip


def rollout(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    tasks_path: Annotated[Path, typer.Option("--tasks", help="Tasks file (JSON Lines, from `fictionworld tasks`).")],
    run_dir: Annotated[Path, typer.Option("--out", help="Run directory: episodes.jsonl (resumable), Parquet.")],
    agent: Annotated[
        str, typer.Option(help="oracle, baseline, explorer, openai (needs --agent-url), or module:Class.")
    ] = "baseline",
    samples: Annotated[
        int,
        typer.Option(
            "--samples-per-task",
            help=f"Episodes per task (a GRPO group), 1 to {MAX_SAMPLES:,}.",
            min=1,
            max=MAX_SAMPLES,
        ),
    ] = 1,
    workers: Annotated[int, typer.Option(help="Ray actors (>= 1).", min=1)] = 2,
    seed: Annotated[
        int, typer.Option(help="Episode seeds derive from this (>= 0), the task and the sample.", min=0)
    ] = 0,
    limit: Annotated[int | None, typer.Option(help="Use only the first N tasks (N >= 1).", min=1)] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds per episode before it is truncated (> 0).", callback=positive)
    ] = 600.0,
    address: Annotated[str | None, typer.Option(help="Ray cluster address ('auto'); default: a local one.")] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help="Tool set: basic (search/open/answer), agentworld, memory (basic + dict_memory), all "
            "(default: the agent's own, else basic)."
        ),
    ] = None,
    max_turns: Annotated[int | None, typer.Option(help="Turn budget, >= 1 (default: the agent's).", min=1)] = None,
    max_context_chars: Annotated[
        int | None, typer.Option(help="Context budget in characters (>= 1,000).", min=1_000)
    ] = None,
    knob: KnobOption = None,
    agent_config: Annotated[str | None, typer.Option(help="Agent settings as a JSON object.")] = None,
    agent_url: Annotated[
        str | None,
        typer.Option(
            help="openai agent: its OpenAI-compatible server, e.g. http://127.0.0.1:30000/v1; required with --agent "
            "openai (the world model's is --world-model-url, even when it is the same server).",
            callback=http_url,
        ),
    ] = None,
    agent_model: Annotated[str | None, typer.Option(help="openai agent: served model name.")] = None,
    tool_mode: Annotated[str | None, typer.Option(help="openai agent: native or tags.")] = None,
    temperature: Annotated[float | None, typer.Option(help="openai agent: sampling temperature (>= 0).", min=0)] = None,
    top_p: Annotated[
        float | None, typer.Option(help="openai agent: nucleus sampling (> 0, <= 1).", callback=probability)
    ] = None,
    top_k: Annotated[
        int | None, typer.Option(help="openai agent: top-k, -1 (off) or >= 1 (SGLang extra_body).", callback=_top_k)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    official_responses: Annotated[
        Path | None,
        typer.Option(
            help="Also write the official WideSearch evaluator's response files here "
            "({model}_{instance_id}_{trial}_response.jsonl, trial from 0)."
        ),
    ] = None,
    response_model: Annotated[
        str | None,
        typer.Option(help="The {model} of those file names (the evaluator's --model_config_name; default: the agent)."),
    ] = None,
    world_model: WorldModelOption = "template",
    world_model_url: WorldModelUrlOption = None,
    world_model_name: WorldModelNameOption = None,
    world_model_api: WorldModelApiOption = None,
) -> None:
    """Run an agent on tasks with a Ray actor pool; resumable, episodes appended as they finish.

    Everything is checked before Ray starts or RUN is written: the world, the tasks, the agent
    and its settings, the env settings; a RUN holding episodes of other settings is refused."""
    from fictionworld.rollouts.pool import SetupError, make_jobs, run_rollouts
    from fictionworld.rollouts.records import RunError, export_parquet
    from fictionworld.storage import WorldFormatError
    from fictionworld.tasks.model import TaskError, read_tasks

    llm = _agent_settings(agent, {"--agent-url": agent_url, "--agent-model": agent_model, "--tool-mode": tool_mode,
                                  "--temperature": temperature, "--top-p": top_p, "--top-k": top_k})  # fmt: skip
    wm = world_model_config(world_model, world_model_url, world_model_name, world_model_api)
    if tools is not None and tools not in ("basic", "agentworld", "memory", "all"):
        fail(f"--tools must be basic, agentworld, memory or all, not {tools!r}")
    env_config: dict = {"tools": tools, "knobs": parse_knobs(knob).model_dump(mode="json") if knob else None,
                        "max_turns": max_turns, "max_context_chars": max_context_chars}  # fmt: skip
    env_config = {k: v for k, v in env_config.items() if v is not None}
    if wm.kind != "template":
        env_config["world_model"] = wm.model_dump(mode="json")
    cfg = _agent_config(agent, agent_config, llm)
    if agent == "openai" and not cfg.get("base_url"):
        fail("--agent openai needs --agent-url (its OpenAI-compatible server, e.g. http://127.0.0.1:30000/v1)")
    response_model = _response_model(official_responses, response_model, agent)
    try:
        tasks = read_tasks(tasks_path)[:limit]
    except TaskError as e:
        fail(str(e))
    if not tasks:
        fail(f"{tasks_path}: no tasks")
    check_output(run_dir, directory=True)
    try:
        res = run_rollouts(path, make_jobs(tasks, samples, seed), agent=agent, agent_config=cfg,
                           env_config=env_config, workers=workers, out=run_dir, timeout=timeout,
                           address=address, progress=not as_json)  # fmt: skip
    except (RunError, WorldFormatError, SetupError) as e:
        fail(str(e))
    except RuntimeError as e:
        _keep_tasks(run_dir, tasks)
        fail(f"{e} (finished episodes are kept in {run_dir / 'episodes.jsonl'}; rerun to resume)", 1)
    _keep_tasks(run_dir, tasks)
    export_parquet(res.records, run_dir / "episodes.parquet")
    warn_flat_groups(res.records, singletons=False)  # one sample per task is a plain evaluation
    summary = res.summary(samples)
    (run_dir / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
    if official_responses is not None:
        from fictionworld.scoring.io import write_official_responses

        files = write_official_responses(run_dir, official_responses, response_model)
        err.print(f"{len(files)} official response files → {official_responses}", highlight=False)
    if as_json:
        out.print_json(json.dumps({"new": res.new, "skipped": res.skipped, "restarts": res.restarts,
                                   "summary": summary.model_dump()}))  # fmt: skip
    else:
        out.print(_table(f"{agent} on {len(tasks)} tasks × {samples}", [_row(agent, res.records)]))
        out.print(f"{res.new} episodes run, {res.skipped} already done, {res.restarts} actor restarts, "
                  f"{res.seconds:.1f} s → {run_dir}/episodes.jsonl, episodes.parquet, tasks.jsonl")  # fmt: skip
    _fail_if_none_ran(res.records, run_dir)


def export(
    run_dir: Annotated[Path, typer.Argument(help="Run directory (with episodes.jsonl).")],
    parquet: Annotated[Path | None, typer.Option("--out", help="Parquet file (default RUN/episodes.parquet).")] = None,
    scale: Annotated[str, typer.Option(help="GRPO advantage: std ((r-mean)/std) or none (r-mean).")] = "std",
) -> None:
    """Export a run's episodes (messages, scores, GRPO advantages) to Parquet for HF datasets."""
    from fictionworld.rollouts.records import export_parquet, read_episodes

    if scale not in ("std", "none"):
        fail(f"--scale must be std or none, not {scale!r}")
    if not run_dir.is_dir():
        fail(f"{run_dir}: " + ("no such directory" if not run_dir.exists() else "not a run directory (a file)"))
    if parquet is not None:
        check_output(parquet)
    records, bad = read_episodes(run_dir / "episodes.jsonl")
    if not records:
        fail(f"{run_dir}: no episodes" + (f" ({bad} unreadable lines)" if bad else ""))
    p = export_parquet(records, parquet or run_dir / "episodes.parquet", scale=scale)
    out.print(
        f"{len({r['episode'] for r in records})} episodes → {p}" + (f" ({bad} unreadable lines skipped)" if bad else "")
    )
    warn_flat_groups(records)


def warn_flat_groups(records, *, singletons: bool = True) -> None:
    """One warning line when exported GRPO groups carry no signal: every sample of a task got
    the same reward (or, with ``singletons``, a task has one sample), so those episodes'
    advantages are null and a GRPO trainer learns nothing from them."""
    from collections import defaultdict

    from fictionworld.rollouts.episode_record import as_episodes
    from fictionworld.rollouts.records import group_advantages

    last = [ep for ep in {ep.episode: ep for ep in as_episodes(records)}.values() if ep.status != "error"]
    advantages = group_advantages(last)
    groups: dict[str, list] = defaultdict(list)
    for ep in last:
        groups[ep.task_id].append(advantages[ep.episode])
    flat = [g for g in groups.values() if g[0].advantage is None and (singletons or len(g) > 1)]
    if not flat:
        return
    episodes = sum(len(g) for g in flat)
    share = f"{episodes:,} of {len(last):,} episodes ({len(flat):,} of {len(groups):,} tasks)"
    alike = [g for g in flat if len(g) > 1]
    if not alike:
        warn(f"{share} have a null GRPO advantage: one sample per task leaves nothing to compare; "
             "roll out with --samples-per-task 2 or more (8 is usual)")  # fmt: skip
        return
    ones, zeros = sum(g[0].group_mean == 1 for g in alike), sum(g[0].group_mean == 0 for g in alike)
    how = ", ".join(x for x in (f"{ones} all 1" if ones else "", f"{zeros} all 0" if zeros else "") if x)
    warn(f"{share} have a null GRPO advantage: every sample of their task got the same reward"
         f"{f' ({how})' if how else ''}, so they carry no training signal; sample more per task "
         "(--samples-per-task), more diversely (a higher --temperature), or take tasks neither too easy "
         "nor too hard for the agent")  # fmt: skip


def _world_for_demo(directory: Path, seed: int, entities: int, force: bool, replace: str):
    """The demo's world: the one saved in ``directory`` when ``seed`` and ``entities`` make it,
    else a new one, saved there. Anything else there (a world of other settings, files that are
    no world) is replaced only with ``force``; else one ``error:`` line ends with ``replace``
    (what the command's user can do about it)."""
    import fictionworld as fw
    from fictionworld.spec import default_spec, graph_spec
    from fictionworld.storage import WorldFormatError

    if directory.exists() and not force and (not directory.is_dir() or any(directory.iterdir())):
        try:
            w = fw.World.load(directory)
        except (WorldFormatError, FileNotFoundError, OSError):
            w = None
        if w is not None and w.seed == seed and graph_spec(w.spec) == graph_spec(default_spec(entities)):
            return w, False
        held = f"a world of seed {w.seed} with {len(w.entities):,} entities" if w is not None else "no demo world"
        fail(f"{directory} holds {held}, not the one of --seed {seed} --entities {entities}: {replace}")
    w = fw.generate(seed=seed, entities=entities)
    w.save(directory, overwrite=True)
    return w, True


def demo(
    directory: Annotated[Path, typer.Option("--dir", help="Where the world, tasks and runs go.")] = Path("demo"),
    seed: Annotated[int, typer.Option(help="World seed (>= 0).", min=0)] = 7,
    entities: Annotated[int, entities_option("World size")] = 3000,
    n: Annotated[
        int, typer.Option("--tasks", help=f"Tasks (half wide, half deep), 1 to {MAX_TASKS:,}.", min=1, max=MAX_TASKS)
    ] = 20,
    workers: Annotated[int, typer.Option(help="Ray actors (>= 1).", min=1)] = 2,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace the world in --dir (another --seed or --entities) and rerun every episode."
        ),
    ] = False,
) -> None:
    """The main job: a small world, tasks, the oracle and baseline agents on local Ray, a table
    (saved in DIR/results.txt)."""
    import shutil

    from fictionworld.rollouts.pool import make_jobs, run_rollouts
    from fictionworld.rollouts.records import RunError
    from fictionworld.tasks.generate import generate_tasks
    from fictionworld.tasks.model import write_tasks

    check_output(directory, "--dir", directory=True)
    t0 = time.perf_counter()
    with out.status("generating the world…"):
        world, fresh = _world_for_demo(directory / "world", seed, entities, force,
                                       "rerun with --force to replace it (and run its episodes again), or give another --dir")  # fmt: skip
    out.print(f"world: {len(world.entities):,} entities, {len(world.facts):,} facts, hash {world.world_hash[:12]} "
              f"({'generated' if fresh else 'reused'}) → {directory / 'world'}")  # fmt: skip
    tasks = generate_tasks(world, n, kind="mixed", seed=seed)
    write_tasks(tasks, directory / "tasks.jsonl")
    out.print(f"tasks: {len(tasks)} ({sum(t.kind == 'wide' for t in tasks)} wide, "
              f"{sum(t.kind == 'deep' for t in tasks)} deep) → {directory / 'tasks.jsonl'}")  # fmt: skip
    rows = []
    for agent in ("oracle", "baseline"):
        run = directory / "runs" / agent
        if force and run.exists():
            shutil.rmtree(run)
        out.print(f"[bold]{agent}[/] on local Ray, {workers} workers")
        try:
            res = run_rollouts(directory / "world", make_jobs(tasks, 1, seed), agent=agent, workers=workers, out=run)
        except RunError as e:
            fail(f"{e.problem}; rerun with --force to start the demo over, or give another --dir")
        _keep_tasks(run, tasks)
        for kind in ("wide", "deep"):
            rows.append(_row(f"{agent} ({kind})", [r for r in res.records if r.get("task_kind") == kind]))
        rows.append(_row(f"{agent} (all)", res.records))
    table = _table("WideSearch metrics (strict scorer; avg over tasks)", rows)
    out.print(table)
    results = directory / DEMO_RESULTS
    results.write_text(plain_text(table), encoding="utf-8")
    out.print(f"done in {time.perf_counter() - t0:.0f} s; table → {results}; episodes in {directory / 'runs'}/*/episodes.jsonl",
              highlight=False, soft_wrap=True)  # fmt: skip


def train_demo(
    directory: Annotated[Path, typer.Option("--dir", help="Where the world, tasks and results go.")] = Path("demo"),
    seed: Annotated[int, typer.Option(help="World seed, >= 0 (tasks and policy seeds derive from it).", min=0)] = 7,
    entities: Annotated[int, entities_option("World size")] = 3000,
    train: Annotated[int, typer.Option(help=f"Training tasks, 1 to {MAX_TASKS:,}.", min=1, max=MAX_TASKS)] = 40,
    heldout: Annotated[
        int, typer.Option(help=f"Held-out tasks (another task seed), 1 to {MAX_TASKS:,}.", min=1, max=MAX_TASKS)
    ] = 20,
    iterations: Annotated[
        int, typer.Option(help=f"GRPO iterations, 1 to {MAX_SAMPLES:,}.", min=1, max=MAX_SAMPLES)
    ] = 12,
    group: Annotated[
        int,
        typer.Option(
            help=f"Episodes per task per iteration (GRPO group size), 2 to {MAX_SAMPLES:,}.", min=2, max=MAX_SAMPLES
        ),
    ] = 8,
    lr: Annotated[float, typer.Option(help="Learning rate on the policy's logits (> 0).", callback=positive)] = 2.0,
    workers: Annotated[int, typer.Option(help="Ray actors (>= 1).", min=1)] = 2,
) -> None:
    """Train a small search-strategy policy with GRPO on Ray rollout rewards; plot its curve."""
    from fictionworld.rollouts.train import plot_curve, save_result, train_policy

    require("plots", "fictionworld train-demo")
    from fictionworld.tasks.generate import generate_tasks

    check_output(directory, "--dir", directory=True)
    with out.status("generating the world…"):
        world, _ = _world_for_demo(directory / "world", seed, entities, False, "give another --dir")
    train_tasks = generate_tasks(world, train, kind="mixed", seed=seed + 1)
    held = generate_tasks(world, heldout, kind="mixed", seed=seed + 2)
    held_ids = {t.instance_id for t in held}
    train_tasks = [t for t in train_tasks if t.instance_id not in held_ids]
    out.print(f"{len(train_tasks)} training tasks (seed {seed + 1}), {len(held)} held-out tasks (seed {seed + 2}); "
              f"policy seed {seed}; {iterations} iterations × {group} samples per task")  # fmt: skip

    def show(i, row):
        h = f"  held-out {row['heldout_reward']:.3f}" if row["heldout_reward"] is not None else ""
        t = f"train {row['train_reward']:.3f}  groups kept {row['kept_groups']}/{row['groups']}" if i else "start"
        out.print(f"  iteration {i:>2}: {t}{h}")

    res = train_policy(directory / "world", train_tasks, held, iterations=iterations, group=group, lr=lr,
                       workers=workers, seed=seed, progress=show)  # fmt: skip
    d = directory / "train"
    save_result(res, d)
    png = plot_curve(res, d / "learning_curve.png")
    out.print(f"held-out mean reward (item F1): {res.start:.3f} → {res.end:.3f} (sampled policy); "
              f"final greedy policy {res.greedy_end:.3f}")  # fmt: skip
    out.print(f"{res.episodes} episodes in {res.seconds:.0f} s; curve → {png}, policy → {d / 'train.json'}")
    if res.end <= res.start:
        err.print("[yellow]warning:[/] the held-out reward did not rise in this run")


def register(app: typer.Typer) -> None:
    """Adds ``rollout``, ``demo`` and ``train-demo`` to ``app`` (``export``, a group now, is added
    by :mod:`fictionworld.cli.export`, which takes :func:`export` as ``export episodes``)."""
    for command in (rollout, demo):
        app.command()(command)
    app.command("train-demo")(train_demo)
