"""The config schema composed from the file and the kinds' parts (crseval.core.config_checks.compose_schema):
each kind's keys join the entry's, one if/then block per kind (shared by kinds that take the same keys), and
a key several kinds take is declared once."""

from __future__ import annotations

import pytest

from crseval.core.config_checks import ConfigError, Dispatch, KindKeys, SchemaPart, check_config, compose_schema

SIZE = {"type": "integer", "minimum": 1, "description": "how large"}
BASE = {
    "type": "object",
    "properties": {"pets": {"type": "array", "items": {"$ref": "#/$defs/pet"}}, "food": {}},
    "$defs": {"pet": {"type": "object", "required": ["kind"], "properties": {"kind": {"description": "its kind"}}}},
}


def pets(*kinds: KindKeys, **order) -> SchemaPart:
    return SchemaPart(dispatch=Dispatch("pet", "kind", kinds, **order))


def test_each_kind_adds_its_keys_and_a_block_that_allows_exactly_them():
    schema = compose_schema(BASE, [pets(KindKeys("cat", {"size": SIZE}, ("size",)), KindKeys("fish", {}))])
    pet = schema["$defs"]["pet"]
    assert pet["properties"] == {"kind": {"description": "its kind", "enum": ["cat", "fish"]}, "size": SIZE}
    assert pet["allOf"] == [
        {
            "if": {"required": ["kind"], "properties": {"kind": {"const": "cat"}}},
            "then": {"additionalProperties": False, "required": ["size"], "properties": {"kind": {}, "size": {}}},
        },
        {
            "if": {"required": ["kind"], "properties": {"kind": {"const": "fish"}}},
            "then": {"additionalProperties": False, "properties": {"kind": {}}},
        },
    ]
    assert "allOf" not in BASE["$defs"]["pet"]  # the file's schema is left as it was
    check_config({"pets": [{"kind": "cat", "size": 2}, {"kind": "fish"}]}, schema)
    with pytest.raises(ConfigError) as error:
        check_config({"pets": [{"kind": "fish", "size": 2}, {"kind": "cat"}, {"kind": "dog"}]}, schema)
    assert error.value.problems == [
        "pets[0]: Additional properties are not allowed ('size' was unexpected)",
        "pets[1]: 'size' is a required property",
        "pets[2].kind: 'dog' is not one of ['cat', 'fish']",
    ]


def test_kinds_that_take_the_same_keys_share_a_block_in_the_order_asked():
    kinds = (KindKeys("cat", {"size": SIZE}), KindKeys("fish", {}), KindKeys("dog", {"size": SIZE}))
    schema = compose_schema(BASE, [pets(*kinds, block_order=("fish", "dog", "cat"), key_order=("size", "kind"))])
    pet = schema["$defs"]["pet"]
    assert [block["if"]["properties"]["kind"] for block in pet["allOf"]] == [
        {"const": "fish"},
        {"enum": ["dog", "cat"]},
    ]
    assert list(pet["properties"]) == ["size", "kind"]


def test_a_narrowed_key_is_checked_in_its_kinds_block_only():
    bowl = KindKeys("fish", {"size": SIZE}, narrowed={"size": {"maximum": 3}})
    schema = compose_schema(BASE, [pets(KindKeys("cat", {"size": SIZE}), bowl)])
    check_config({"pets": [{"kind": "cat", "size": 9}]}, schema)
    with pytest.raises(ConfigError, match="pets.0..size: 9 is greater than the maximum of 3"):
        check_config({"pets": [{"kind": "fish", "size": 9}]}, schema)


def test_settings_set_keywords_where_the_file_has_the_node():
    food = SchemaPart(settings={("properties", "food"): {"enum": ["hay", "seeds"], "default": "hay"}})
    assert compose_schema(BASE, [food])["properties"]["food"] == {"enum": ["hay", "seeds"], "default": "hay"}
    with pytest.raises(ValueError, match="the config schema has no properties/drink"):
        compose_schema(BASE, [SchemaPart(settings={("properties", "drink"): {"enum": ["water"]}})])


@pytest.mark.parametrize(
    "kinds",
    [
        (KindKeys("cat", {"size": SIZE}), KindKeys("dog", {"size": {**SIZE, "minimum": 2}})),  # two schemas of a key
        (KindKeys("cat", {"kind": {"type": "string"}}),),  # a key every entry takes
    ],
)
def test_a_key_is_declared_once(kinds):
    with pytest.raises(ValueError, match="a key shared by several kinds is declared once"):
        compose_schema(BASE, [pets(*kinds)])


def test_a_kind_requires_only_its_own_keys_and_blocks_order_every_kind():
    with pytest.raises(ValueError, match="cat: a key it requires or narrows is not one of its keys"):
        compose_schema(BASE, [pets(KindKeys("cat", {}, ("size",)))])
    with pytest.raises(ValueError, match="the block order"):
        compose_schema(BASE, [pets(KindKeys("cat", {}), KindKeys("fish", {}), block_order=("cat",))])
