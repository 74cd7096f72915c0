"""A `python` system's reply is bounded as an `http` system's is: a reply at the bound is taken, one over it is a
named error of its turn, the bound takes the HTTP range, and a reply over it stops the shard keeping nothing of
it."""

from __future__ import annotations

import pytest

from crseval.core.bounded_http import DEFAULT_MAX_REPLY_BYTES
from crseval.simulate.systems.external import ExternalSystemError
from crseval.simulate.systems.python_system import PythonSystem

# --- a python system's reply ----------------------------------------------------------------------------------------

LARGE_REPLIES = """
class Large:
    def __init__(self, size=0, dict_form=False, wide=False):
        self.size, self.dict_form, self.wide = size, dict_form, wide

    def start_session(self, session_id, seed):
        pass

    def respond(self, turn, user_text, history):
        text = ("é" if self.wide else "a") * self.size
        if self.dict_form:
            return {"reply": "Try these.", "recommended": [text[i:i + 100] for i in range(0, len(text), 100)]}
        return text
"""


@pytest.fixture
def large_replies(tmp_path, monkeypatch):
    (tmp_path / "large_replies.py").write_text(LARGE_REPLIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "large_replies:Large"


def python_system(entry_point, **options) -> PythonSystem:
    system = PythonSystem("mine", entry_point, options=options)
    system.start("mine/s00001", 7)
    return system


def test_a_python_reply_at_the_http_bound_is_taken(large_replies):
    assert DEFAULT_MAX_REPLY_BYTES == 1 << 20
    envelope = len('{"reply": "", "recommended": null, "constraints": null}')  # the JSON the bound counts
    reply = python_system(large_replies, size=DEFAULT_MAX_REPLY_BYTES - envelope).answer(1, "Hi", [])
    assert len(reply.text) == DEFAULT_MAX_REPLY_BYTES - envelope
    with pytest.raises(ExternalSystemError, match="a reply of 1,048,577 bytes"):
        python_system(large_replies, size=DEFAULT_MAX_REPLY_BYTES - envelope + 1).answer(1, "Hi", [])


@pytest.mark.parametrize(
    "options, shown",
    [
        ({"size": 300 << 20}, "a reply of at least 314,572,800 bytes"),
        ({"size": 600_000, "wide": True}, "a reply of 1,200,055 bytes"),  # characters under the bound, bytes over
        ({"size": 2 << 20, "dict_form": True}, "a reply of at least 2,097,162 bytes"),
    ],
)
def test_a_python_reply_over_the_http_bound_is_a_named_error_of_its_turn(large_replies, options, shown):
    system = python_system(large_replies, **options)
    with pytest.raises(ExternalSystemError) as error:
        system.answer(3, "Hi", [])
    message = str(error.value)
    assert message.startswith(
        f"system 'mine' ({large_replies}), session mine/s00001, turn 3: respond() returned {shown}"
    )
    assert "more than the bound of 1,048,576 bytes (max_reply_bytes" in message and not error.value.transient


def test_a_python_bound_takes_the_http_range(large_replies):
    assert python_system(large_replies).max_reply_bytes == DEFAULT_MAX_REPLY_BYTES
    system = PythonSystem("mine", large_replies, options={"size": 2000}, max_reply_bytes=1000)
    system.start("mine/s00001", 7)
    with pytest.raises(ExternalSystemError, match="bound of 1,000 bytes"):
        system.answer(1, "Hi", [])
    for bound in (0, (64 << 20) + 1, True, 1.5):
        with pytest.raises(ValueError, match=r"system 'mine': max_reply_bytes must be 1 to 67108864 bytes"):
            PythonSystem("mine", large_replies, max_reply_bytes=bound)


def test_a_python_reply_over_the_bound_stops_the_shard_and_keeps_nothing_of_it(large_replies, catalog_files, tmp_path):
    """As an http system's reply over its bound: the job fails naming the turn; nothing reaches the reply cache."""
    from crseval.catalog.index import CatalogIndex
    from crseval.language.concepts import ConceptMatcher
    from crseval.simulate.systems.external import ExternalAgent, ReplyCache

    index = CatalogIndex.read(catalog_files / "films.parquet", catalog_files / "concepts.parquet")
    system = PythonSystem("mine", large_replies, options={"size": 2 << 20})
    agent = ExternalAgent(system, index, ConceptMatcher(index.concepts, index.films), 7, ReplyCache(tmp_path / "cache"))
    with pytest.raises(ExternalSystemError, match="turn 1: respond[(][)] returned a reply of at least 2,097,152 bytes"):
        agent.respond(1, "Hi")
    assert not any((tmp_path / "cache").rglob("*.json"))
