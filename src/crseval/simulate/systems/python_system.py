"""A recommender under test written as a Python class, loaded by import path (`agent: python`).

The class a researcher writes (see examples/my_recommender.py for a complete one):

    class MyRecommender:
        def __init__(self, **options): ...
            # the system's `options` from the config, as keyword arguments; load models, indexes here
        def start_session(self, session_id: str, seed: int) -> None: ...
            # a new conversation begins: forget the last one; `seed` makes a stochastic system repeatable
        def respond(self, turn: int, user_text: str, history: list[dict]) -> str | dict: ...
            # turn: 1, 2, ...; history: the conversation before this user turn,
            # [{"role": "user" | "assistant", "content": str}, ...] (a copy: changing it changes nothing)

`respond` returns the reply text, or a dict {"reply": str, "recommended": [str, ...], "constraints":
[{"field": str, "value": str, "negated": bool}, ...]} where "recommended" (the titles the system means to
recommend) and "constraints" (what it believes the user wants) are optional; no other keys are allowed.

The config names the class as "package.module:Class" (`entry_point`); the module must be importable
where the workflow runs (installed in its environment, or on PYTHONPATH). One instance holds one
conversation at a time: `start_session`, then `respond` for each turn, in order.

A reply is bounded as an `http` system's body is, by the same default (crseval.core.bounded_http
DEFAULT_MAX_REPLY_BYTES, 1 MiB; the constructor's `max_reply_bytes` takes 1 byte to LARGEST_REPLY_BYTES,
64 MiB, the config sets no other for a `python` system), counted as the reply would travel over HTTP: its
JSON form ({"reply", "recommended", "constraints"}) in UTF-8. A larger reply is refused whole, never cut
short: nothing of it reaches the shard or the reply cache.

Anything the class does wrong is an error that stops the job (ExternalSystemError, not transient):
a method that raises, a reply of the wrong type or over the bound, or a call that does not return
within `timeout` seconds. A timed-out call keeps running in its thread, which Python cannot stop; the
job fails and the thread ends with the process.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import threading
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from typing import Any, Callable, Iterator

from crseval.core.bounded_http import DEFAULT_MAX_REPLY_BYTES, LARGEST_REPLY_BYTES, size
from crseval.simulate.systems.agent_kind import AgentKind, shared_keys
from crseval.simulate.systems.external import ExternalReply, ExternalSystemError, external_agent, reply_from_record

ENTRY_POINT = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def load_class(name: str, entry_point: str) -> Callable:
    """The class an entry point "package.module:Class" names (a dotted attribute path after the colon
    reaches nested classes); errors name the config key and what is missing."""
    where = f"system {name!r}: entry_point {entry_point!r}"
    if not isinstance(entry_point, str) or not ENTRY_POINT.match(entry_point):
        raise ExternalSystemError(f"{where} is not of the form 'package.module:Class'")
    module_name, attribute_path = entry_point.split(":")
    try:
        target = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise ExternalSystemError(
                f"{where}: module {module_name!r} does not exist (no module named {error.name!r})"
            ) from error
        raise ExternalSystemError(f"{where}: importing module {module_name!r} failed: {_cause(error)}") from error
    except Exception as error:
        raise ExternalSystemError(f"{where}: importing module {module_name!r} failed: {_cause(error)}") from error
    for attribute in attribute_path.split("."):
        if not hasattr(target, attribute):
            raise ExternalSystemError(f"{where}: module {module_name!r} has no attribute {attribute_path!r}")
        target = getattr(target, attribute)
    if not callable(target):
        raise ExternalSystemError(f"{where}: {attribute_path!r} is a {type(target).__name__}, not a class")
    return target


@functools.lru_cache(maxsize=64)
def package_version(entry_point: str) -> str | None:
    """The installed version of the distribution providing the entry point's top-level package, or
    None when it is not installed as a distribution (a module on PYTHONPATH). Asked for every reply's
    cache key, and a scan of every installed package's metadata takes a good part of a second: once
    per entry point and process (a job does not see packages installed while it runs)."""
    top = entry_point.split(":")[0].split(".")[0]
    try:
        return version(top)
    except PackageNotFoundError:
        pass
    distributions = packages_distributions().get(top, [])
    return version(distributions[0]) if len(distributions) == 1 else None


class PythonSystem:
    """An ExternalSystem answering through an instance of a researcher's class (module docstring)."""

    def __init__(
        self,
        name: str,
        entry_point: str,
        *,
        options: dict | None = None,
        timeout: float | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ):
        self.name = name
        self.entry_point = entry_point
        self.options = dict(options or {})
        self.timeout = timeout
        if isinstance(max_reply_bytes, bool) or not (
            isinstance(max_reply_bytes, int) and 0 < max_reply_bytes <= LARGEST_REPLY_BYTES
        ):  # the range of an http system's bound (crseval.core.bounded_http.Bounds)
            raise ValueError(
                f"system {name!r}: max_reply_bytes must be 1 to {LARGEST_REPLY_BYTES} bytes, got {max_reply_bytes!r}"
            )
        self.max_reply_bytes = max_reply_bytes
        self.session_id: str | None = None
        self._stuck = False  # a call timed out and still runs: the instance is in an unknown state
        cls = load_class(name, entry_point)
        try:
            self.instance = cls(**self.options)
        except Exception as error:
            raise ExternalSystemError(
                f"system {name!r}: {entry_point}(**options) raised {_cause(error)} (options: {sorted(self.options)})"
            ) from error
        for method in ("start_session", "respond"):
            if not callable(getattr(self.instance, method, None)):
                raise ExternalSystemError(f"system {name!r}: {entry_point} has no method {method}()")

    def start(self, session_id: str, seed: int) -> None:
        self.session_id = session_id
        self._call("start_session", None, session_id, seed)

    def answer(self, turn: int, user_text: str, history: list[dict]) -> ExternalReply:
        if self.session_id is None:
            raise ExternalSystemError(f"system {self.name!r}: turn {turn} asked before start() began a session")
        result = self._call("respond", turn, turn, user_text, [dict(message) for message in history])
        return self._reply(turn, result)

    def describe(self) -> dict:
        return _describe(self.entry_point, self.options)

    def _where(self, turn: int | None) -> str:
        moment = "at session start" if turn is None else f"turn {turn}"
        return f"system {self.name!r} ({self.entry_point}), session {self.session_id}, {moment}"

    def _call(self, method: str, turn: int | None, *args) -> Any:
        """The instance's method called with `args`, within `timeout` seconds when one is set: the call
        runs in a daemon thread, so a hung class cannot keep the process alive after the job fails."""
        if self._stuck:
            raise ExternalSystemError(f"{self._where(turn)}: an earlier call timed out and may still be running")
        function = getattr(self.instance, method)
        if self.timeout is None:
            try:
                return function(*args)
            except Exception as error:
                raise ExternalSystemError(f"{self._where(turn)}: {method}() raised {_cause(error)}") from error
        outcome: dict[str, Any] = {}

        def run():
            try:
                outcome["value"] = function(*args)
            except BaseException as error:  # reported in the caller's thread, whatever it was
                outcome["error"] = error

        thread = threading.Thread(target=run, name=f"{self.name}.{method}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            self._stuck = True
            raise ExternalSystemError(
                f"{self._where(turn)}: {method}() did not return within {self.timeout:g} s "
                "(the call cannot be stopped; it keeps running until the process ends)"
            )
        if "error" in outcome:
            error = outcome["error"]
            raise ExternalSystemError(f"{self._where(turn)}: {method}() raised {_cause(error)}") from error
        return outcome["value"]

    def _reply(self, turn: int, result: Any) -> ExternalReply:
        """The reply checked against the protocol: a str, or a dict with a str "reply" and, optionally,
        a list of str "recommended" and a list of {field, value, negated} "constraints"."""
        wrong = f"{self._where(turn)}: respond() returned"
        if isinstance(result, str):
            reply = ExternalReply(result)
        elif not isinstance(result, dict):
            raise ExternalSystemError(
                f"{wrong} {type(result).__name__} ({result!r:.80}); expected a str or a dict with a str 'reply'"
            )
        else:
            try:
                reply = reply_from_record(result, text_key="reply", strict=True)
            except ValueError as problem:
                raise ExternalSystemError(f"{wrong} a dict that {problem}") from None
        over = _over_bound(reply, self.max_reply_bytes)
        if over:
            raise ExternalSystemError(
                f"{wrong} a reply of {over}, more than the bound of {size(self.max_reply_bytes)} (max_reply_bytes, "
                "counted as its JSON in UTF-8); nothing of it was kept",
                transient=False,
            )
        return reply


def _over_bound(reply: ExternalReply, limit: int) -> str:
    """How large `reply` is, when larger than `limit` bytes as the JSON an http system would send; "" within it.
    A text of more characters than the bound is over it (a character is a byte or more) without being encoded."""
    strings = [reply.text, *(reply.recommended or ()), *(c["value"] for c in reply.constraints or ())]
    characters = sum(map(len, strings))
    if characters > limit:
        return f"at least {size(characters)}"
    record = {"reply": reply.text, "recommended": reply.recommended, "constraints": reply.constraints}
    encoded = len(json.dumps(record, ensure_ascii=False).encode("utf-8", errors="surrogatepass"))
    return size(encoded) if encoded > limit else ""


def _cause(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _describe(entry_point: str, options: dict) -> dict:
    return {
        "agent": "python",
        "entry_point": entry_point,
        "package_version": package_version(entry_point),
        "options": dict(options),
    }


def _python_system(entry: dict, client, prompt_file: str | None) -> PythonSystem:
    return PythonSystem(
        entry["name"], entry["entry_point"], options=entry.get("options", {}), timeout=entry.get("timeout")
    )


def _entry_point_problems(entry: dict, key: str) -> Iterator[str]:
    """The class is imported while the config is checked, so that a typo in its module or class stops the
    run before any job, named by its key (the import runs the module's top-level code, as the job would)."""
    entry_point = entry.get("entry_point")
    if not isinstance(entry_point, str) or entry_point.count(":") != 1:
        return  # the schema's pattern reports it
    module_name, class_name = entry_point.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any failure of the import is the user's to see, by key
        yield f"{key}.entry_point: {entry_point!r}: module {module_name!r} does not import: {error!r}"
        return
    if not isinstance(getattr(module, class_name, None), type):
        yield f"{key}.entry_point: {entry_point!r}: module {module_name!r} has no class {class_name!r}"


KIND = AgentKind(
    "python",
    "a researcher's Python class answers each turn in the job's process (docs/own_recommender.md)",
    make_agent=external_agent,
    make_system=_python_system,
    describe_entry=lambda entry: _describe(entry["entry_point"], entry.get("options", {})),
    check=_entry_point_problems,
    required_keys={
        "entry_point": {
            "type": "string",
            "pattern": "^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$",
            "description": "`python`: the class as `package.module:Class` (importable in the workflow's environment)",
        }
    },
    optional_keys=shared_keys("options", "timeout"),
)
