"""Simulated sessions: seeds, one session's dialogue, and resumable shards of sessions.

Session seeds come from the experiment seed and the session's index alone, so session i has
the same simulated user in every system (paired comparisons) and in every shard layout.
A shard appends each finished session to a progress file (one JSON line, flushed and synced);
a killed job re-run keeps the finished sessions, drops a truncated last line, and redoes
nothing else. Sessions made under another configuration are never reused.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from tqdm import tqdm

from crseval.catalog.index import CatalogIndex
from crseval.core.fields import display
from crseval.core.io import JsonLinesError, json_line, json_lines
from crseval.core.session_records import session_validator, validate_session, write_sessions
from crseval.language.asks import asked_fields
from crseval.language.concepts import ConceptMatcher
from crseval.replies.cases import START, reply_case
from crseval.simulate.systems.agents import Agent
from crseval.simulate.user.paraphrase import Paraphraser
from crseval.simulate.user.profiles import UserProfile
from crseval.simulate.user.simulator import make_user
from crseval.simulate.user.templates import Templates
from crseval.simulate.user.user_plan import SimulatorSettings
from crseval.simulate.user.voice import Voice

log = logging.getLogger(__name__)


def session_seed(experiment_seed: int, index: int) -> int:
    """A 31-bit seed for session `index`, independent of shard size and system."""
    digest = hashlib.sha256(f"{experiment_seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def trial_seed(seed: int, trial: int) -> int:
    """The system's sampling seed in trial `trial` of the session with `seed` (sessions.trials): the
    session's own seed in the first trial, so that one trial is what the experiment gave without trials."""
    if trial == 0:
        return seed
    digest = hashlib.sha256(f"{seed}:trial{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class SessionContext:
    """What every session of an experiment shares."""

    index: CatalogIndex
    matcher: ConceptMatcher
    templates: Templates
    simulator: SimulatorSettings
    turns: int
    catalog_sha: str
    paraphraser: Paraphraser | None = None
    voice: Voice | None = None  # the learned voice, for a profile that speaks with it
    profile: UserProfile | None = None  # resolved; none: the built-in the schema's default `simulator.profile` names
    experiment_seed: int | None = None  # with a session's index, spreads a learned voice's draws over the sessions


def run_session(
    ctx: SessionContext, system: str, agent: Agent, session_index: int, seed: int, config_sha: str, trial: int = 0
) -> dict:
    """One session of `system` with the simulated user of `seed`. In a repeated trial (`trial` > 0) the
    user is the same (its plan and its random draws come from `seed`); it reacts to what the system says,
    so it says the same unless the system does not (the agent carries the trial's sampling seed)."""
    spread = (session_index, ctx.experiment_seed) if ctx.experiment_seed is not None else None
    user = make_user(ctx.index, ctx.simulator, ctx.templates, seed, ctx.matcher, ctx.voice, ctx.profile, spread)
    session_id = f"{system}/s{session_index:05d}" + (f"/t{trial}" if trial else "")
    if hasattr(agent, "begin_session"):  # systems under test from outside (crseval.simulate.systems.external)
        agent.begin_session(session_id)
    turns = []
    last_recommended: list[str] = []
    last_mentioned: list[str] = []
    last_unknown: list[str] = []
    last_asks: frozenset[str] = frozenset()
    last_case, replies_before = START, []
    ending = {"reason": "turn_limit", "turn": ctx.turns, "farewell": None}
    for number in range(1, ctx.turns + 1):
        user_turn = user.turn(number, last_recommended, last_mentioned, last_unknown, last_asks, last_case)
        if user_turn.meta["stage"] == "leave":  # the user gave up: the session ends without a reply
            ending = {"reason": "abandoned", "turn": number - 1, "farewell": user_turn.text}
            break
        text, paraphrase = user_turn.text, None
        if ctx.paraphraser is not None:
            required = _paraphrase_keeps(user_turn.meta, user.profile.is_explicit)
            text, verdict, llm, examples = ctx.paraphraser(text, required, seed * 1000 + number)
            paraphrase = {"verdict": verdict, "template_text": user_turn.text, "llm": llm}
            if examples:  # the voice's turns the prompt showed (simulator.paraphrase.examples)
                paraphrase["examples"] = examples
        if getattr(
            agent, "reads_ground_truth", False
        ):  # calibration systems only (crseval.simulate.systems.calibration)
            agent.see_ground_truth(user_turn.meta)
        reply = agent.respond(number, text)
        asks = asked_fields(reply.text)
        turns.append(
            {
                "turn": number,
                "user_text": text,
                "user_meta": {**user_turn.meta, "paraphrase": paraphrase},
                "system_text": reply.text,
                "system_constraints": [c.as_dict() for c in reply.tracked],
                "candidate_titles": reply.candidates,
                "recommended_titles": reply.recommended_titles,
                "mentioned_titles": reply.mentioned_titles,
                "unknown_titles": reply.unknown_titles,
                "user_implies": user_turn.implies,
                "system_asks": sorted(asks),
                "llm": reply.llm,
                **(reply.tools or {}),  # a tool-using system's calls and commits (crseval.catalog.toolkit)
            }
        )
        last_recommended, last_mentioned = reply.recommended_titles, reply.mentioned_titles
        last_unknown, last_asks = reply.unknown_titles, asks
        if user.voicing.speaks:  # what the reply did, which the learned voice's reaction answers
            last_case = reply_case(reply.text, last_recommended, last_unknown, replies_before, text)
            replies_before.append(reply.text)
    return {
        "session_id": session_id,
        "session_index": session_index,
        "system": system,
        "seed": seed,
        "catalog_sha": ctx.catalog_sha,
        "config_sha": config_sha,
        "liked_titles": list(user.liked),
        "unknown_title_turns": sum(t["user_meta"]["cannot_judge"] for t in turns),
        "turns": turns,
        "shift_events": user.shift_events,
        "profile": user.profile.name,
        "ending": ending,
        **({"trial": trial} if trial else {}),
    }


def _paraphrase_keeps(meta: dict, explicit: bool) -> list[str]:
    """The words a rewording must keep: the catalog values and titles the turn names (the explicit
    user's: its focus and bridge, as the thesis user's paraphrases were checked)."""
    if explicit:
        required = [display(meta["focus_field"], meta["focus_value"]), *meta["titles"]]
        return required + ([meta["bridge"]["value"]] if meta["bridge"] else [])
    return [display(s["field"], s["value"]) for s in meta["stated"]] + meta["titles"]


def load_progress(path: Path, config_sha: str) -> dict[int, dict]:
    """Finished sessions of an interrupted shard. A truncated last line (the job was killed
    mid-write) is cut off the file; sessions of another configuration are discarded."""
    if not path.exists():
        return {}
    raw = path.read_bytes()
    done: dict[int, dict] = {}
    good_end = raw.rfind(b"\n") + 1  # a line the kill cut short has no newline yet
    try:
        for _, record in json_lines(raw[:good_end], path):
            if record.get("config_sha") == config_sha:
                done.setdefault(record["session_index"], record)
    except JsonLinesError as error:  # a damaged line: it and the lines after it are simulated again
        log.warning("%s", error)
        good_end = sum(len(line) + 1 for line in raw.split(b"\n")[: error.line - 1])
    if good_end < len(raw):
        log.warning("%s: dropping %d bytes of an interrupted write", path, len(raw) - good_end)
        with open(path, "r+b") as handle:
            handle.truncate(good_end)
    return done


def run_shard(
    ctx: SessionContext,
    system: str,
    make_agent: Callable[[int], Agent],
    indices: range,
    experiment_seed: int,
    config_sha: str,
    progress_path: str | Path,
    output_path: str | Path,
    schema: dict,
    concurrency: int = 1,
    trial: int = 0,
) -> dict:
    """Simulate the sessions `indices` of one system, resuming from `progress_path`, and write
    them, validated and in index order, to `output_path`. Returns counts for the log.

    `trial` > 0: the sessions of a repeated trial (sessions.trials): each with its session's user, the
    agent given the trial's sampling seed (`trial_seed`).

    With `concurrency` > 1, up to that many sessions run at once in threads (each session stays
    sequential): a server backend answers many requests at a time, while every session's seed,
    cache keys and record are what they would be alone. Only this thread writes the progress
    file, one whole line per finished session, so a kill leaves at most a cut last line, which
    the re-run drops.
    """
    progress_path = Path(progress_path)
    progress_path.parent.mkdir(parents=True, exist_ok=True)
    done = load_progress(progress_path, config_sha)
    done = {i: r for i, r in done.items() if i in indices}
    resumed = len(done)
    validator = session_validator(schema)
    bar = tqdm(
        total=len(indices) * ctx.turns,
        desc=f"{system} turns",
        unit="turn",
        initial=resumed * ctx.turns,  # an abandoned session counts its turns as done
        mininterval=1.0,
    )

    def simulate(index: int) -> dict:
        seed = session_seed(experiment_seed, index)
        agent = make_agent(seed)
        if trial:
            agent.sampling_seed = trial_seed(seed, trial)
        record = run_session(ctx, system, agent, index, seed, config_sha, trial)
        validate_session(validator, record)
        return record

    with open(progress_path, "ab") as progress:
        for record in _in_flight(simulate, [i for i in indices if i not in done], concurrency):
            progress.write(json_line(record).encode("utf-8"))
            progress.flush()
            os.fsync(progress.fileno())
            done[record["session_index"]] = record
            bar.update(ctx.turns)
            bar.set_postfix(sessions=f"{len(done)}/{len(indices)}")
    bar.close()
    write_sessions((done[index] for index in indices), output_path, validator)
    progress_path.unlink()
    turns = [t["user_meta"] for i in indices for t in done[i]["turns"]]
    events = Counter(meta["plan_event"] for meta in turns)
    ordinary = sum(1 for meta in turns if meta["stage"] != "open" and meta["plan_event"] != "shift")
    return {
        "sessions": len(indices),
        "resumed": resumed,
        "simulated": len(indices) - resumed,
        "ordinary_turns": ordinary,
        "contradictions": events["contradiction"],
        "unknown_title_reactions": sum(1 for meta in turns if meta["stage"] == "unknown_title"),
        "contradiction_rate_realised": round(events["contradiction"] / ordinary, 4) if ordinary else None,
        "abandoned": sum(1 for i in indices if done[i]["ending"]["reason"] == "abandoned"),
    }


def _in_flight(work: Callable[[int], dict], indices: list[int], concurrency: int) -> Iterator[dict]:
    """work(i) for every index, at most `concurrency` at a time, yielded as each finishes.

    The first failure stops the shard: sessions not yet started are cancelled, the ones in flight
    are waited for (their results are yielded first, so they are kept for the re-run), then the
    error is raised.
    """
    if concurrency <= 1:
        yield from map(work, indices)
        return
    pending = iter(indices)
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="session") as pool:
        running = {pool.submit(work, index) for index in itertools.islice(pending, concurrency)}
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                if future.exception() is not None:
                    failure = failure or future.exception()
                    continue
                yield future.result()
            if failure is None:
                running |= {pool.submit(work, index) for index in itertools.islice(pending, len(finished))}
    if failure is not None:
        raise failure
