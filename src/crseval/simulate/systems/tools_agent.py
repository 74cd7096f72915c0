"""`agent: tools`: an LLM that searches the catalog, reads films and commits its recommendations through tools.

The model sees its system prompt (`prompt`, plain text), the conversation (the user's turns and its own final
messages) and the catalog toolkit's three tools (crseval.catalog.toolkit.TOOLS); it does its own tracking and
retrieval. A turn is a loop: the model is called; each tool call of its reply runs in order against the
session's toolkit and its result goes back as a tool message; the model is called again, until
- it commits with `recommend` (the turn's recommendations are the committed films, its message the reply the
  user reads; any later call, in the same reply or not, is recorded as ignored, never run),
- it answers with a plain message (no recommendation: under the commit protocol only `recommend` registers
  one; films the message names are reported as mentioned),
- or the turn's bounds are spent (`tool_limits.calls_per_turn` tool calls, `max_steps` model calls): the turn
  ends without a commit, its message what the model last said ("" if nothing), and the record says so.

Every tool call is recorded (crseval.catalog.toolkit.ToolTurn); the calls of a reply past
MAX_TOOL_CALLS_PER_REPLY are neither run nor listed, but counted (`tool_calls_unlisted`), whether the backend
dropped them or the reply still holds them. Each model call is an LLMRequest that carries
the tool definitions and every tool message of the loop so far, so the reply cache's key covers them: the
toolkit answers alike for the same calls, so a re-run finds every step in the cache and calls no model.
A model call that fails for good (after the client's retries) fails the job, naming the model, as for every
LLM system. Each tool message answers its call by the call's id, so ids a reply repeats are made distinct
(`distinct_ids`): a server matches results to calls by id, and one id answered twice is a request it may refuse.
"""

from __future__ import annotations

from crseval.catalog.index import CatalogIndex
from crseval.catalog.toolkit import TOOLS, Toolkit, ToolLimits, ToolTurn
from crseval.language.concepts import ConceptMatcher
from crseval.llm import LLMClient, LLMRequest
from crseval.llm.base import MAX_TOOL_CALLS_PER_REPLY, LLMError, LLMResponse
from crseval.llm.prompts import PromptTemplate
from crseval.simulate.systems.agent_kind import AgentKind, shared_keys
from crseval.simulate.systems.agents import Reply

DEFAULT_MAX_STEPS = 4


def combined_meta(metas: list[dict]) -> dict | None:
    """The turn's `llm` record over its model calls: times and tokens summed, cached only if every call was."""
    if not metas:
        return None

    def total(key):
        values = [m[key] for m in metas]
        return None if any(v is None for v in values) else sum(values)

    return {
        "backend": metas[0]["backend"],
        "model": metas[0]["model"],
        "latency_s": round(sum(m["latency_s"] for m in metas), 4),
        "prompt_tokens": total("prompt_tokens"),
        "completion_tokens": total("completion_tokens"),
        "cached": all(m["cached"] for m in metas),
        "steps": len(metas),
    }


def unlisted_calls(response: LLMResponse, kept: int) -> int:
    """The calls of a reply past the per-reply bound: those the backend dropped (its `tool_calls_dropped`
    note, crseval.llm.base.tool_calls_from, kept in the reply cache) and those beyond `kept` here."""
    dropped = response.extra.get("tool_calls_dropped", 0) if isinstance(response.extra, dict) else 0
    if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 0:
        raise LLMError(
            f"{response.backend} model {response.model}: the reply's tool_calls_dropped is {dropped!r:.40}, "
            "not a count of calls"
        )
    return dropped + len(response.tool_calls or []) - kept


def distinct_ids(calls: list[dict]) -> list[dict]:
    """A reply's calls with each id once: a repeated id gets "~<n>" appended until it is new (ids kept as the
    reply gave them otherwise, so the cache keys of replies without repeats stay as they were)."""
    seen: set[str] = set()
    distinct = []
    for call in calls:
        call_id, repeat = call["id"], 1
        while call_id in seen:
            call_id, repeat = f"{call['id']}~{repeat}", repeat + 1
        seen.add(call_id)
        distinct.append(call if call_id == call["id"] else {**call, "id": call_id})
    return distinct


class ToolsAgent:
    """The `tools` system of one session (see the module docstring)."""

    reads_ground_truth = False

    def __init__(
        self,
        index: CatalogIndex,
        matcher: ConceptMatcher,
        seed: int,
        client: LLMClient,
        prompt: PromptTemplate,
        options: dict,
        limits: ToolLimits = ToolLimits(),
        max_steps: int = DEFAULT_MAX_STEPS,
    ):
        self.index = index
        self.matcher = matcher
        self.client = client
        self.prompt = prompt
        self.options = options
        self.max_steps = max_steps
        self.toolkit = Toolkit(index, seed, limits)
        self.history: list[dict] = []
        self.seed = seed
        self.sampling_seed = seed  # a repeated trial's own (crseval.simulate.sessions.trial_seed)

    def respond(self, turn: int, user_text: str) -> Reply:
        messages = [
            {"role": "system", "content": self.prompt.text.strip()},
            *self.history,
            {"role": "user", "content": user_text},
        ]
        tool_turn = ToolTurn(self.toolkit)
        text, metas = "", []
        for step in range(1, self.max_steps + 1):
            request = LLMRequest.sampled(
                messages,
                self.options,
                seed=self.sampling_seed * 1000 + turn,
                tools=TOOLS,
                tag=f"{self.prompt.path.name}@{self.prompt.version}",
            )
            response = self.client.complete(request)
            metas.append(response.meta())
            text = (response.text or "").strip()
            if not response.tool_calls:
                tool_turn.end = "message"
                break
            calls = distinct_ids(response.tool_calls[:MAX_TOOL_CALLS_PER_REPLY])  # as backends keep them (llm.base)
            tool_turn.count_unlisted(unlisted_calls(response, len(calls)))
            messages.append({"role": "assistant", "content": response.text or "", "tool_calls": calls})
            for call in calls:
                result = tool_turn.call(step, call["name"], call["arguments"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": result})
            if tool_turn.over:
                break
        if tool_turn.end is None:  # every model call asked for tools, none committed
            tool_turn.end = "bound"
        if tool_turn.end == "recommend":
            text = tool_turn.message
        committed = tool_turn.titles() or []
        found = [self.index.title(f) for f in self.toolkit.returned]
        titles = self.matcher.title_recognizer.recognise(text, candidates=found, user_text=user_text) if text else None
        named = [*titles.recommended, *titles.mentioned] if titles else []
        mentioned = [t for t in dict.fromkeys(named) if t not in committed]
        self.history += [{"role": "user", "content": user_text}, {"role": "assistant", "content": text}]
        unknown = list(titles.unknown) if titles else []
        return Reply(text, [], committed, mentioned, [], combined_meta(metas), unknown, tool_turn.record())


def _tools_agent(runner, seed: int) -> ToolsAgent:
    entry = runner.system
    return ToolsAgent(
        runner.ctx.index,
        runner.ctx.matcher,
        seed,
        runner.client,
        runner.prompt,
        entry["options"],
        ToolLimits.from_config(entry.get("tool_limits")),
        entry.get("max_steps", DEFAULT_MAX_STEPS),
    )


KIND = AgentKind(
    "tools",
    "an LLM calls the catalog toolkit (search_films, film_details, recommend) from `prompt`; only `recommend` "
    "commits recommendations",
    make_agent=_tools_agent,
    llm_backend=True,
    prompt_key="prompt",
    required_keys=shared_keys("prompt", "backend", "options"),
    optional_keys={
        **shared_keys("tool_limits"),
        "max_steps": {
            "type": "integer",
            "minimum": 1,
            "maximum": 16,
            "description": "`tools`: model calls one turn may take (each may ask for tool calls); default 4",
        },
    },
)
