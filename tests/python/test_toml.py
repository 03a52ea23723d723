"""Dict scenarios go to Rust as JSON; `foliosim.to_toml` writes them with the toml crate."""

import copy
import math
import tomllib

import pytest

import foliosim

from test_run import SMALL_DICT, SMALL_TOML


def test_dict_round_trips_through_toml():
    text = foliosim.to_toml(SMALL_DICT)
    parsed = tomllib.loads(text)
    assert parsed["machine"]["cpus"] == 4
    assert parsed["sysfs"]["hugepages"]["64K"] == "always"
    assert parsed["workload"][0]["nproc"] == 8 and parsed["workload"][0]["memcg"] == "bench"
    # Every default written out, the same as the TOML scenario's, and a fixed point.
    assert text == foliosim.scenario_defaults(SMALL_TOML)
    assert foliosim.to_toml(parsed) == text
    # The same run whichever form.
    assert foliosim.run(text).to_json() == foliosim.run(SMALL_DICT).to_json()


def test_none_leaves_a_field_out():
    d = copy.deepcopy(SMALL_DICT)
    d["machine"]["sched_slice_ns"] = None
    d["workload"][0]["madv_hugepage"] = None
    assert foliosim.to_toml(d) == foliosim.to_toml(SMALL_DICT)


def test_tuples_are_lists():
    d = copy.deepcopy(SMALL_DICT)
    d["memcg"] = ({"name": "bench", "max": "256M"},)
    assert foliosim.to_toml(d) == foliosim.to_toml(SMALL_DICT)


def test_unknown_field_is_named():
    d = copy.deepcopy(SMALL_DICT)
    d["machine"]["cpuz"] = 4
    with pytest.raises(ValueError, match="cpuz"):
        foliosim.to_toml(d)


def test_wrong_type_is_named():
    d = copy.deepcopy(SMALL_DICT)
    d["machine"]["cpus"] = "four"
    with pytest.raises(ValueError, match="cpus"):
        foliosim.run(d)


def test_invalid_value_is_named():
    d = copy.deepcopy(SMALL_DICT)
    d["machine"]["cpus"] = 0
    with pytest.raises(ValueError, match="machine.cpus"):
        foliosim.to_toml(d)


def test_non_finite_number_is_named():
    d = copy.deepcopy(SMALL_DICT)
    d["workload"][0]["nproc"] = math.nan
    with pytest.raises(ValueError, match=r"workload\[0\]\.nproc"):
        foliosim.to_toml(d)


def test_unsupported_type_is_named():
    d = copy.deepcopy(SMALL_DICT)
    d["workload"][0]["size"] = object()
    with pytest.raises(TypeError, match=r"scenario field `workload\[0\]\.size`: unsupported type object"):
        foliosim.to_toml(d)


def test_not_a_dict():
    with pytest.raises(TypeError):
        foliosim.to_toml(["machine"])
