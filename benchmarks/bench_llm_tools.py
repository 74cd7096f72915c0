"""Tool calls on the embedded Qwen model (llama.cpp in process): two ways of getting them, measured.

    python benchmarks/bench_llm_tools.py [--options json,chatml] [--seeds 1] [--threads 2] [--max-steps 4]
        [--temperature 0.7] [--max-tokens 200] [--out FILE]

A movie recommender with the three tools of a tool-using system (search_films, film_details, recommend: the
shipped definitions, crseval.catalog.toolkit.TOOLS) and a system prompt that says to search, then recommend,
answers 15 user turns in 5 conversations of 3 turns, at most `--max-steps` model calls per turn. The tools run here on a
small invented catalog (a search matches any of the values asked for); a call that is not well-formed gets
an error result, as the real loop gives it. The options:

- `json` (crseval's llamacpp backend, LlamaCppBackend.complete): one JSON object per reply, held to a
  grammar made from the definitions: {"tool", "arguments"} (arguments held to the tool's parameter schema)
  or {"message"}; definitions in the system message, results as user turns "Result of <name>: <json>".
- `chatml` (llama-cpp-python's `chatml-function-calling` handler on the same Llama, tool_choice "auto"):
  the handler's own prompt of the definitions, its grammar of "functions.<name>:" or "message:", then the
  arguments held to the parameter schema; the results as the same user turns (its template has no tool
  role), earlier calls in OpenAI's shape.

Per option: share of replies that are a well-formed call (a known tool, arguments that are JSON and valid
under its parameter schema, checked with jsonschema: every call of the reply), of replies that are text,
of turns that reach a `recommend` call (well-formed) within `--max-steps` calls, and seconds per model call;
also how many arguments a well-formed search gives (of the 10 it may: a small model tends to fill every one
the grammar offers) and replies that are only a tool's name as text ("functions.<name>:", what the chatml
handler gives when its first step picks "message:": its message is held to the grammar of tool names).
Same requests, same seeds, one Llama per option, options interleaved turn by turn.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import jsonschema
from llama_cpp import llama_chat_format

from crseval.catalog.toolkit import TOOLS
from crseval.llm import LLMError, LLMRequest
from crseval.llm.llamacpp_backend import LlamaCppBackend, _load
from crseval.llm.models import model_path

MODEL = "qwen2.5-coder-0.5b-instruct"
SYSTEM = (
    "You are a movie recommender. For each request of the user, first call search_films with what the user "
    "wants, then call recommend with the ids of films from the search results and a short message. Only "
    "recommend films the search returned."
)
CONVERSATIONS = [
    ["I want a comedy with Jim Carrey", "not horror please, something from the 90s", "any other with him?"],
    ["Something by Christopher Nolan?", "I'd like a science fiction film", "no space movies, I get bored"],
    ["A romantic movie for tonight", "in French if possible", "maybe something older, before 2000"],
    ["Recommend me a crime thriller", "with Robert De Niro", "one directed by Martin Scorsese"],
    ["An animated film for my kids", "not Disney princesses", "something funny with animals"],
]
# id, title, year, genres, actors, directors, language
FILMS = [
    (1, "Ace Ventura: Pet Detective", "1994", ["comedy"], ["Jim Carrey"], ["Tom Shadyac"], "English"),
    (2, "The Mask", "1994", ["comedy", "fantasy"], ["Jim Carrey", "Cameron Diaz"], ["Chuck Russell"], "English"),
    (3, "Dumb and Dumber", "1994", ["comedy"], ["Jim Carrey", "Jeff Daniels"], ["Peter Farrelly"], "English"),
    (4, "Liar Liar", "1997", ["comedy"], ["Jim Carrey"], ["Tom Shadyac"], "English"),
    (5, "The Truman Show", "1998", ["comedy", "drama"], ["Jim Carrey", "Ed Harris"], ["Peter Weir"], "English"),
    (
        6,
        "Eternal Sunshine of the Spotless Mind",
        "2004",
        ["romance", "drama", "science fiction"],
        ["Jim Carrey", "Kate Winslet"],
        ["Michel Gondry"],
        "English",
    ),
    (7, "Inception", "2010", ["science fiction", "thriller"], ["Leonardo DiCaprio"], ["Christopher Nolan"], "English"),
    (
        8,
        "Interstellar",
        "2014",
        ["science fiction", "drama"],
        ["Matthew McConaughey"],
        ["Christopher Nolan"],
        "English",
    ),
    (9, "Memento", "2000", ["thriller", "mystery"], ["Guy Pearce"], ["Christopher Nolan"], "English"),
    (
        10,
        "The Prestige",
        "2006",
        ["drama", "mystery", "science fiction"],
        ["Hugh Jackman", "Christian Bale"],
        ["Christopher Nolan"],
        "English",
    ),
    (11, "Amélie", "2001", ["romance", "comedy"], ["Audrey Tautou"], ["Jean-Pierre Jeunet"], "French"),
    (
        12,
        "Les Parapluies de Cherbourg",
        "1964",
        ["romance", "musical"],
        ["Catherine Deneuve"],
        ["Jacques Demy"],
        "French",
    ),
    (13, "Cyrano de Bergerac", "1990", ["romance", "drama"], ["Gérard Depardieu"], ["Jean-Paul Rappeneau"], "French"),
    (
        14,
        "Before Sunrise",
        "1995",
        ["romance", "drama"],
        ["Ethan Hawke", "Julie Delpy"],
        ["Richard Linklater"],
        "English",
    ),
    (15, "Notting Hill", "1999", ["romance", "comedy"], ["Julia Roberts", "Hugh Grant"], ["Roger Michell"], "English"),
    (16, "Goodfellas", "1990", ["crime", "drama"], ["Robert De Niro", "Ray Liotta"], ["Martin Scorsese"], "English"),
    (17, "Heat", "1995", ["crime", "thriller"], ["Robert De Niro", "Al Pacino"], ["Michael Mann"], "English"),
    (18, "Taxi Driver", "1976", ["crime", "drama"], ["Robert De Niro"], ["Martin Scorsese"], "English"),
    (19, "Casino", "1995", ["crime", "drama"], ["Robert De Niro", "Sharon Stone"], ["Martin Scorsese"], "English"),
    (20, "Se7en", "1995", ["crime", "thriller"], ["Brad Pitt", "Morgan Freeman"], ["David Fincher"], "English"),
    (21, "Toy Story", "1995", ["animation", "comedy"], ["Tom Hanks"], ["John Lasseter"], "English"),
    (22, "Finding Nemo", "2003", ["animation", "comedy"], ["Albert Brooks"], ["Andrew Stanton"], "English"),
    (23, "Zootopia", "2016", ["animation", "comedy"], ["Ginnifer Goodwin"], ["Byron Howard"], "English"),
    (24, "Madagascar", "2005", ["animation", "comedy"], ["Ben Stiller"], ["Eric Darnell"], "English"),
    (25, "The Shining", "1980", ["horror"], ["Jack Nicholson"], ["Stanley Kubrick"], "English"),
    (26, "Scream", "1996", ["horror", "mystery"], ["Neve Campbell"], ["Wes Craven"], "English"),
    (27, "Gravity", "2013", ["science fiction", "thriller"], ["Sandra Bullock"], ["Alfonso Cuarón"], "English"),
    (28, "The Matrix", "1999", ["science fiction", "action"], ["Keanu Reeves"], ["Lana Wachowski"], "English"),
]
RECORDS = [
    {"id": i, "title": t, "year": y, "genre": g, "actor": a, "director": d, "language": [lang]}
    for i, t, y, g, a, d, lang in FILMS
]
BY_ID = {film["id"]: film for film in RECORDS}


def as_list(value) -> list[str]:
    return [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]


def search_films(arguments: dict) -> dict:
    """Films that have any of the values asked for (a loose stand-in for the real search), best first."""
    excluded = {v.lower() for v in as_list(arguments.get("exclude"))}
    wanted = [
        (field, value.lower())
        for field in ("genre", "actor", "director", "writer", "language", "year")
        for value in as_list(arguments.get(field))
    ]
    words = [w.lower() for w in str(arguments.get("keywords") or "").split() if len(w) > 3]
    scored = []
    for film in RECORDS:
        values = {field: [str(v).lower() for v in as_list(film.get(field))] for field in film if field != "id"}
        if excluded & {v for vs in values.values() for v in vs}:
            continue
        score = sum(any(value in v for v in values.get(field, [])) for field, value in wanted)
        score += sum(word in film["title"].lower() or word in " ".join(film["genre"]) for word in words)
        if score or not (wanted or words):
            scored.append((-score, film["id"]))
    limit = arguments.get("limit") if isinstance(arguments.get("limit"), int) else 5
    films = [BY_ID[i] for _, i in sorted(scored)[: max(1, min(limit, 5))]]
    summary = [{"id": f["id"], "title": f["title"], "year": f["year"], "genre": f["genre"][:3]} for f in films]
    return {"films": summary, "total": len(scored)}


def run_tool(name: str, arguments_text: str) -> tuple[bool, dict]:
    """(well-formed, result) of one call: a known tool, arguments JSON and valid under its schema."""
    tool = next((t["function"] for t in TOOLS if t["function"]["name"] == name), None)
    if tool is None:
        return False, {"error": f"unknown tool {name!r}"}
    try:
        arguments = json.loads(arguments_text)
        jsonschema.validate(arguments, tool["parameters"])
    except (ValueError, jsonschema.ValidationError) as error:
        return False, {"error": f"arguments not valid: {str(error).splitlines()[0][:120]}"}
    if name == "search_films":
        return True, search_films(arguments)
    if name == "film_details":
        film = BY_ID.get(arguments["id"])
        return True, film if film else {"error": f"no film with id {arguments['id']}"}
    unknown = [i for i in arguments["film_ids"] if i not in BY_ID]
    if unknown:
        return True, {"error": f"unknown film ids {unknown}"}
    return True, {"films": [{"id": i, "title": BY_ID[i]["title"]} for i in arguments["film_ids"]]}


class JsonOption:
    """crseval's own backend (the JSON grammar)."""

    name = "json"

    def __init__(self, threads: int, n_ctx: int):
        self.backend = LlamaCppBackend(MODEL, n_ctx=n_ctx, threads=threads)

    def call(self, request: LLMRequest) -> tuple[str, list[dict]]:
        response = self.backend.complete(request)
        return response.text, response.tool_calls or []


class ChatmlOption:
    """llama-cpp-python's chatml-function-calling handler, on a Llama of its own."""

    name = "chatml"

    def __init__(self, threads: int, n_ctx: int):
        # a second instance (another chat_format key), so the two options never share a KV cache
        self.llm = _load(str(model_path(MODEL)), n_ctx, threads, "chatml-function-calling")

    def call(self, request: LLMRequest) -> tuple[str, list[dict]]:
        messages = []
        for m in request.message_dicts():
            if m["role"] == "tool":
                messages.append({"role": "user", "content": f"Result of {m['name']}: {m['content']}"})
            elif m.get("tool_calls"):
                calls = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in m["tool_calls"]
                ]
                messages.append({"role": "assistant", "content": m["content"] or None, "tool_calls": calls})
            else:
                messages.append({"role": m["role"], "content": m["content"]})
        self.llm.set_seed(request.seed)  # the handler passes no seed on
        try:
            reply = llama_chat_format.chatml_function_calling(
                llama=self.llm,
                messages=messages,
                tools=request.tool_definitions(),
                tool_choice="auto",
                temperature=request.temperature,
                top_p=request.top_p,
                max_tokens=request.max_tokens,
            )
        except ValueError as error:  # e.g. the context window is full: the handler's arguments are unbounded
            raise LLMError(str(error)) from error
        message = reply["choices"][0]["message"]
        calls = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in message.get("tool_calls") or []
        ]
        return message.get("content") or "", calls


def run_turn(option, history: list[dict], user: str, seed: int, args, stats: dict) -> list[dict]:
    """One user turn of up to `max_steps` model calls; the history after it."""
    messages = [*history, {"role": "user", "content": user}]
    for step in range(args.max_steps):
        request = LLMRequest.chat(
            messages,
            temperature=args.temperature,
            top_p=0.95,
            max_tokens=args.max_tokens,
            seed=seed * 100 + step,
            tools=TOOLS,
        )
        started = time.perf_counter()
        try:
            text, calls = option.call(request)
        except LLMError as error:
            stats["seconds"].append(time.perf_counter() - started)
            stats["replies"].append("error")
            stats["errors"].append(str(error)[:160])
            return messages
        stats["seconds"].append(time.perf_counter() - started)
        if not calls:
            named = re.fullmatch(r"\s*functions\.\w+:\s*", text)  # chatml's message branch: a tool's name, no call
            stats["replies"].append("named a tool" if named else "text" if text.strip() else "empty")
            stats["examples"].append(f"text: {text[:100]!r}")
            messages.append({"role": "assistant", "content": text or "(nothing)"})
            return messages
        outcomes = [run_tool(call["name"], call["arguments"]) for call in calls]
        for call, (ok, _) in zip(calls, outcomes):
            if ok and call["name"] == "search_films":
                stats["search_arguments"].append(len(json.loads(call["arguments"])))
        stats["replies"].append("call" if all(ok for ok, _ in outcomes) else "bad call")
        stats["examples"].extend(f"call: {c['name']} {c['arguments'][:100]}" for c in calls)
        messages.append({"role": "assistant", "content": text, "tool_calls": calls})
        for call, (ok, result) in zip(calls, outcomes):
            content = json.dumps(result, ensure_ascii=False)
            messages.append({"role": "tool", "content": content, "tool_call_id": call["id"], "name": call["name"]})
            if ok and call["name"] == "recommend" and "error" not in result:
                stats["recommended"] += 1
                stats["steps_to_recommend"].append(step + 1)
                return messages
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--options", default="json,chatml")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    kinds = {"json": JsonOption, "chatml": ChatmlOption}
    options = [kinds[name](args.threads, args.n_ctx) for name in args.options.split(",")]
    stats = {
        o.name: {
            "replies": [],
            "seconds": [],
            "recommended": 0,
            "steps_to_recommend": [],
            "errors": [],
            "examples": [],
            "search_arguments": [],
        }
        for o in options
    }
    histories = {}
    turns = 0
    for seed in range(args.seeds):
        for number, conversation in enumerate(CONVERSATIONS):
            for option in options:
                histories[option.name] = [{"role": "system", "content": SYSTEM}]
            for user in conversation:
                turns += 1
                for option in options:
                    histories[option.name] = run_turn(
                        option, histories[option.name], user, seed * 1000 + number, args, stats[option.name]
                    )
                print(f"turn {turns}: {user!r} done", file=sys.stderr, flush=True)
    rows = []
    for option in options:
        s = stats[option.name]
        calls = len(s["replies"])
        rows.append(
            {
                "option": option.name,
                "model_calls": calls,
                "well_formed_call_share": round(s["replies"].count("call") / calls, 3),
                "bad_call_share": round(s["replies"].count("bad call") / calls, 3),
                "text_share": round(s["replies"].count("text") / calls, 3),
                "tool_name_as_text_share": round(s["replies"].count("named a tool") / calls, 3),
                "empty_or_error_share": round((s["replies"].count("empty") + s["replies"].count("error")) / calls, 3),
                "turns": turns,
                "recommend_within_steps_share": round(s["recommended"] / turns, 3),
                "mean_steps_to_recommend": round(statistics.mean(s["steps_to_recommend"]), 2)
                if s["steps_to_recommend"]
                else None,
                "arguments_per_search_mean": round(statistics.mean(s["search_arguments"]), 1)
                if s["search_arguments"]
                else None,
                "seconds_per_call_mean": round(statistics.mean(s["seconds"]), 2),
                "seconds_per_call_median": round(statistics.median(s["seconds"]), 2),
                "errors": s["errors"][:3],
            }
        )
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "stats": stats}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
