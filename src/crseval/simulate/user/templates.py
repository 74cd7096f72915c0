"""The user templates (resources/templates/user.yaml): the file, the groups each user speaks, and their check.

`Templates` draws one template of a group, in a profile's voice where the file gives it one; `spoken_groups`
names the groups the wording (crseval.simulate.user.wording) of a profile may draw from, and `template_problems`
checks a config's template file holds every one of them, so that no session stops on a missing group.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import yaml

from crseval.core.experiment import imports_sessions
from crseval.core.fields import CONCEPT_FIELDS
from crseval.simulate.user.profiles import UserProfile, resolve_profile
from crseval.simulate.user.turn_content import conduct_of


class SimulatorTextError(RuntimeError):
    """No wording of an utterance says exactly what the simulated user means."""


class Templates:
    """The utterance templates of resources/templates/user.yaml."""

    def __init__(self, data: dict, version: str):
        self.data = data
        self.version = version  # content hash: an edited template file is a new version

    @classmethod
    def load(cls, path: str | Path) -> "Templates":
        text = Path(path).read_text(encoding="utf-8")
        return cls(yaml.safe_load(text), hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])

    def pick(self, rng: np.random.Generator, *keys: str, voice: str = "") -> str:
        """One template of the group `keys`, drawn with `rng`: the voice's own group when the voice
        has one (`voices.<voice>` in the file), else the common one. A group the file lacks (the config
        check names it first: template_problems) is a SimulatorTextError naming it."""
        options = self.data.get("voices", {}).get(voice, {}) if voice else {}
        if not _has_group(options, keys):
            options = self.data
        for key in keys:
            options = options.get(key) if isinstance(options, dict) else None
        if not _is_group(options):
            found = "none" if options is None else f"{type(options).__name__} {options!r:.60}"
            raise SimulatorTextError(
                f"the user templates (version {self.version}) have no group {'.'.join(keys)!r} (a list of templates; "
                f"found {found}); add it as in resources/templates/user.yaml"
            )
        return options[int(rng.integers(len(options)))]


def _has_group(data: dict, keys: tuple[str, ...]) -> bool:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return False
        data = data[key]
    return True


def _is_group(options) -> bool:
    """A group of templates: a list of one or more texts."""
    return isinstance(options, list) and bool(options) and all(isinstance(t, str) for t in options)


# ------------------------------------------------------------------ the template groups each user speaks

# The groups the thesis user (the built-in `explicit` profile: one template a turn) draws from; those keyed by a
# field (`focus.genre`) are drawn for every field of `simulator.field_order`, and `bridge` for every concept field
# and those of the order.
_EXPLICIT_GROUPS = ("open", "accept", "reject", "ask", "no_title", "unknown_title", "shift", "shift_new", "contradict")
_EXPLICIT_FIELD_GROUPS = ("focus", "kept", "reject_value")
_EXPLICIT_KEEP = "keep"  # the wishes that still hold after a shift


def spoken_groups(profile: UserProfile, field_order: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The template groups (Templates.pick's keys) the user of `profile` may draw from in a session whose
    foci move through `field_order`: the groups its code picks, less those a share of 0 never reaches (a
    profile with `greeting: 0` never greets; one with `patience: 0` never leaves; `terse: 0` never speaks
    the short templates, `terse: 1` only those)."""
    fields = tuple(dict.fromkeys(field_order))
    bridges = tuple(dict.fromkeys(CONCEPT_FIELDS + fields))
    if conduct_of(profile).one_template:
        groups = [(g,) for g in (*_EXPLICIT_GROUPS, _EXPLICIT_KEEP)]
        groups += [(g, f) for g in _EXPLICIT_FIELD_GROUPS for f in fields]
        return groups + [("bridge", f) for f in bridges]
    # a turn of parts: a reaction in short (terse) or in full sentences, each of its parts as the profile talks
    styles = [style for style, spoken in (("short", profile.terse > 0), ("plain", profile.terse < 1)) if spoken]
    groups = [("no_preference",)]
    groups += [(g,) for g, spoken in (("greeting", profile.greeting > 0), ("thanks", profile.thanks > 0)) if spoken]
    groups += [("leave",)] if profile.patience else []
    always_volunteers = all(shares[0] >= 1 for shares in (profile.disclosure, *profile.field_disclosure.values()))
    groups += [] if always_volunteers else [("open_vague",)]  # an opening that says no wish
    reactions = ("accept", "more", "reject", "unknown", "no_title") + (("why",) if profile.why > 0 else ())
    groups += [(f"{reaction}_{style}",) for reaction in reactions for style in styles]
    groups += [("reason", f) for f in fields] if profile.reason > 0 else []
    if profile.terse > 0:  # a wish, an exclusion and an announced shift in short
        groups += [("announce",)] + [(g, f) for g in ("short", "exclude_short") for f in fields]
    if profile.terse < 1:  # ... and in full sentences
        groups += [("wish",), ("shift",), ("shift_new",)] + [(g, f) for g in ("focus", "reject_value") for f in fields]
        groups += [("bridge", f) for f in bridges]
    return groups


def template_problems(config: dict, locate: Callable[[str], str | Path]) -> Iterator[str]:
    """The config check of `simulator.templates` against every profile the systems meet (built-in or defined
    under `simulator.profiles`; crseval.simulate.user.profiles): the voice a profile speaks in is a group under
    `voices` (without it the user would speak the full-sentence templates), and every group the profile
    draws from (spoken_groups) is in the file, a list of texts, so that no session stops on a missing one.
    The file is read where `locate` (path -> where the workflow reads it: crseval.planning.input_path) says;
    one that does not exist is left to the check of the inputs, values of the wrong shape to the schema."""
    simulator = config.get("simulator") if isinstance(config, dict) else None
    if not isinstance(simulator, dict) or imports_sessions(config):
        return
    path = simulator.get("templates")
    if not isinstance(path, str) or not path:
        return
    read = Path(locate(path))
    if not read.is_file():
        return  # crseval.planning.check_inputs names the missing file
    where = f"simulator.templates: {path}"
    try:
        data = yaml.safe_load(read.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, yaml.YAMLError) as error:
        yield f"{where} cannot be read as YAML: {error}"
        return
    if not isinstance(data, dict):
        yield f"{where} holds a {type(data).__name__}, not groups of templates (as resources/templates/user.yaml)"
        return
    order = simulator.get("field_order")
    field_order = tuple(f for f in order if isinstance(f, str)) if isinstance(order, list) else ()
    systems = config.get("systems") if isinstance(config.get("systems"), list) else []
    named = [("simulator.profile", simulator.get("profile"))]
    named += [(f"systems[{i}].profile", s.get("profile")) for i, s in enumerate(systems) if isinstance(s, dict)]
    users: dict[str, list[str]] = {}  # profile name -> the keys that name it
    for key, name in named:
        if isinstance(name, str):
            users.setdefault(name, []).append(key)
    voices = data.get("voices") if isinstance(data.get("voices"), dict) else {}
    for name, keys in users.items():
        try:
            profile = resolve_profile(name, simulator)
        except (ValueError, TypeError, AttributeError):
            continue  # crseval.simulate.user.profiles.config_problems names it
        who = f"profile {name} ({', '.join(keys)})"
        voice = voices.get(profile.voice, {}) if profile.voice else {}
        if profile.voice and profile.voice not in voices:
            found = f"has the voices {', '.join(map(str, voices))}" if voices else "has no voices"
            yield (
                f"{where}: {who} speaks in the voice {profile.voice!r}, and the file {found}: its user would speak "
                f"the full-sentence templates; add voices.{profile.voice} as in resources/templates/user.yaml"
            )
        elif not isinstance(voice, dict):
            yield f"{where}: voices.{profile.voice}, the voice {who} speaks in, is not a mapping of template groups"
            voice = {}
        missing, wrong = [], []
        for group in spoken_groups(profile, field_order):
            own = _has_group(voice, group)  # Templates.pick draws from the voice's group where it has one
            options = voice if own else data
            for key in group:
                options = options.get(key) if isinstance(options, dict) else None
            if options is None:
                missing.append(".".join(group))
            elif not _is_group(options):
                wrong.append(f"voices.{profile.voice}.{'.'.join(group)}" if own else ".".join(group))
        if missing:
            yield (
                f"{where}: {who} speaks from groups the file does not have: {', '.join(missing)}; add them as in "
                "resources/templates/user.yaml"
            )
        if wrong:
            yield f"{where}: {who} speaks from groups that are not lists of one or more texts: {', '.join(wrong)}"
