"""An example recommender under test for `agent: python`: the project's own template agent behind the
class protocol (crseval.simulate.systems.python_system), so that its sessions are those of the built-in
`agent: template` system. Start from it to put your own recommender under the simulated user.

In the config (the catalog paths are the index the workflow writes for the experiment; the remaining
options are the config's `agent:` section, to be given as there for the sessions to match):

    systems:
      - name: my-recommender
        agent: python
        entry_point: examples.my_recommender:MyRecommender
        options:
          films: results/<experiment>/catalog/films.parquet
          concepts: results/<experiment>/catalog/concepts.parquet
          candidates: 5
          history_turns: 2
          track_plot_keywords: false

`examples` is importable when the workflow runs from the repository's top folder (it is then on the
import path); a recommender kept elsewhere is installed into the environment or put on PYTHONPATH.
"""

from __future__ import annotations

from functools import lru_cache

from crseval.catalog.index import CatalogIndex
from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.language.concepts import ConceptMatcher
from crseval.simulate.systems.agents import AgentSettings, TemplateAgent


@lru_cache(maxsize=4)
def load_catalog(films: str, concepts: str, track_plot_keywords: bool) -> tuple[CatalogIndex, ConceptMatcher]:
    """The catalog index and the agent's concept matcher, read once per process however many instances
    are made (crseval.simulate.shard builds the template agent's matcher the same way)."""
    index = CatalogIndex.read(films, concepts)
    fields = CONCEPT_FIELDS + (KEYWORD_FIELD,) if track_plot_keywords else CONCEPT_FIELDS
    return index, ConceptMatcher(index.concepts, index.films, fields)


class MyRecommender:
    """The template agent, one per session. It tracks the user's wishes from the user's turns alone, so
    `history` is read only when the instance is new to a session already under way (a run resumed
    after an interruption asks a fresh instance for turn n > 1): the agent then catches up on it."""

    def __init__(self, *, films: str, concepts: str, **agent):
        """`films`, `concepts`: the catalog index files; `agent`: the settings of AgentSettings
        (candidates, history_turns, track_plot_keywords)."""
        self.settings = AgentSettings(**agent)
        self.index, self.matcher = load_catalog(str(films), str(concepts), self.settings.track_plot_keywords)
        self.agent: TemplateAgent | None = None

    def start_session(self, session_id: str, seed: int) -> None:
        self.agent = TemplateAgent(self.index, self.matcher, self.settings, seed)

    def respond(self, turn: int, user_text: str, history: list[dict]) -> dict:
        if self.agent is None:
            raise RuntimeError("respond() before start_session()")
        if len(history) != 2 * (turn - 1):
            raise ValueError(f"turn {turn} needs the {2 * (turn - 1)} messages before it; history holds {len(history)}")
        self.agent.catch_up(history)
        reply = self.agent.respond(turn, user_text)
        return {
            "reply": reply.text,
            "recommended": reply.recommended_titles,
            "constraints": [constraint.as_dict() for constraint in reply.tracked],
        }
